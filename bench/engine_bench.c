/* remat_bench_cbc: remat's MILP against a reference solver, CBC, on the
 * same MILP. For each instance (cbc_instances.c) remat solves through the
 * "milp" strategy as users get it, and CBC solves the model that remat's
 * MILP is (lp_model.h, RM_MILP_DEFAULT, S and R binary) written as MPS; the
 * table gives both answers, bounds and times and the ratio of the times to
 * proof. A benchmark, never a test: CBC is a program it runs (bench/cbc.sh
 * installs it), not something the build, the demo or the tests need.
 *
 * This file: the options, the document's header and main. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_bench.h"
#include "cli_util.h"
#include "clock.h"

#ifndef REMAT_SOURCE_DIR
#define REMAT_SOURCE_DIR "."
#endif

/* Where CBC is not run. The budget rows make the model ~n^3 nonzeros:
 * measured here, ResNet-18 (147 nodes) is 45818 columns, a 97 MB MPS file
 * and 0.9 GB resident, and CBC with a 5 s limit took 11-45 s (reading and
 * its root) without finding a solution; ResNet-34 (267 nodes) would be ~6x
 * that, ResNet-50 (367) ~15x. So the full models stop at ResNet-18 / U-Net
 * (141 nodes) by default; --max-nodes 0 --max-cols 0 lifts both caps. */
#define DEFAULT_MAX_COLS 200000L
#define DEFAULT_MAX_NODES 150L

#define USAGE                                                                                                          \
    "usage: remat_bench_cbc [--quick] [--time-limit S] [--only models|linear|random] [--out FILE]\n"                   \
    "                       [--models LIST] [--random N] [--cbc PROGRAM] [--max-nodes N] [--max-cols N]\n"             \
    "                       [--workdir DIR] [--keep-files] [--models-dir DIR] [--format md|csv|json]\n"                \
    "\n"                                                                                                               \
    "remat's MILP (lp_solve) against CBC on the same MILP: markdown on stdout (and in --out FILE, written\n"           \
    "instance by instance), progress on stderr.\n"                                                                     \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --quick          a few small instances (seconds): a smoke run; time limit 10 s unless given\n"                  \
    "  --time-limit S   wall-clock seconds for remat's milp and for CBC, each (default 60; 0 = none)\n"                \
    "  --only FAMILY    models, linear or random (default: all three)\n"                                               \
    "  --out FILE       also write the output to FILE (e.g. docs/bench/cbc.md)\n"                                      \
    "  --cbc PROGRAM    the CBC executable (default: cbc, from PATH)\n"                                                \
    "  --models LIST    built-in models to run, e.g. vgg16,resnet50 (default: every non-tiny one)\n"                   \
    "  --max-nodes N    do not even build the MILP for CBC above N nodes (default 150; 0 = no cap)\n"                  \
    "  --random N       how many random DAGs (default 50; --quick 3)\n"                                                \
    "  --max-cols N     do not run CBC on models with more columns (default 200000; 0 = no cap)\n"                     \
    "  --workdir DIR    where the MPS and solution files go (default: a fresh directory in /tmp)\n"                    \
    "  --keep-files     keep them (one per instance)\n"                                                                \
    "  --models-dir DIR where model names are looked up (default: the source tree's models/)\n"                        \
    "  --format F       md (the default): the markdown document; csv or json: only the instances' rows, one\n"         \
    "                   table over every family, each value its own column (costs in the instance's unit,\n"           \
    "                   with checkpoint_all_cost to make overheads of them); no header, prose or totals\n"

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "remat_bench_cbc: %s%s%s\n\n%s", msg, arg ? " " : "", arg ? arg : "", USAGE);
    return 1;
}

/* Flags, then options with a value; 0, 1 (usage error) or -1 (--help). */
static int parse_args(cbc_cfg *c, const char **out, int argc, char **argv)
{
    const char *time_s = NULL, *cols_s = NULL, *nodes_s = NULL, *random_s = NULL, *format_s = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL, **slot = NULL;
        if (!strcmp(argv[i], "--quick"))
            c->quick = 1;
        else if (!strcmp(argv[i], "--keep-files"))
            c->keep_files = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return -1;
        else if (rm_cli_option(&v, argc, argv, &i, "--time-limit"))
            slot = &time_s;
        else if (rm_cli_option(&v, argc, argv, &i, "--only"))
            slot = &c->only;
        else if (rm_cli_option(&v, argc, argv, &i, "--out"))
            slot = out;
        else if (rm_cli_option(&v, argc, argv, &i, "--cbc"))
            slot = &c->cbc;
        else if (rm_cli_option(&v, argc, argv, &i, "--max-cols"))
            slot = &cols_s;
        else if (rm_cli_option(&v, argc, argv, &i, "--max-nodes"))
            slot = &nodes_s;
        else if (rm_cli_option(&v, argc, argv, &i, "--models"))
            slot = &c->models;
        else if (rm_cli_option(&v, argc, argv, &i, "--random"))
            slot = &random_s;
        else if (rm_cli_option(&v, argc, argv, &i, "--workdir"))
            slot = &c->workdir;
        else if (rm_cli_option(&v, argc, argv, &i, "--models-dir"))
            slot = &c->models_dir;
        else if (rm_cli_option(&v, argc, argv, &i, "--format"))
            slot = &format_s;
        else
            return usage_error("unknown argument", argv[i]);
        if (slot && (!v || !*v)) return usage_error("a value is missing after", argv[i]);
        if (slot) *slot = v;
    }
    if (format_s && bench_format_parse(&c->fmt, format_s))
        return usage_error("--format takes md, csv or json, not", format_s);
    if (c->quick && !time_s) c->time_limit_s = 10;
    if (time_s && rm_cli_parse_seconds(&c->time_limit_s, time_s))
        return usage_error("--time-limit takes seconds >= 0, not", time_s);
    if (cols_s && rm_cli_parse_long(&c->max_cols, cols_s, 0, 1000000000L))
        return usage_error("--max-cols takes a count >= 0, not", cols_s);
    if (nodes_s && rm_cli_parse_long(&c->max_nodes, nodes_s, 0, 1000000000L))
        return usage_error("--max-nodes takes a count >= 0, not", nodes_s);
    if (c->quick && !random_s) c->random = 3;
    if (random_s && rm_cli_parse_long(&c->random, random_s, 0, 100000L))
        return usage_error("--random takes a count >= 0, not", random_s);
    if (c->only && strcmp(c->only, "models") && strcmp(c->only, "linear") && strcmp(c->only, "random"))
        return usage_error("--only takes models, linear or random, not", c->only);
    /* The paths go into a shell command between single quotes. */
    if (strchr(c->cbc, '\'') || (c->workdir && strchr(c->workdir, '\'')))
        return usage_error("--cbc and --workdir may not contain a quote", NULL);
    return 0;
}

/* CBC must be there before hours of remat's solves are spent. */
static int cbc_present(const cbc_cfg *c, char *version, size_t len)
{
    char cmd[4200], line[256];
    snprintf(cmd, sizeof cmd, "'%s' -quit 2>&1", c->cbc);
    FILE *f = popen(cmd, "r");
    if (!f) return 0;
    snprintf(version, len, "unknown");
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Version:", 8)) snprintf(version, len, "%.*s", (int)strcspn(line + 9, " \r\n"), line + 9);
    int st = pclose(f);
    return st == 0;
}

static void print_header(const cbc_cfg *c, int argc, char **argv, const char *version)
{
    char cmd[4096], cpu[256], date[64], load[64];
    bench_command_line(cmd, sizeof cmd, argc, argv);
    bench_cpu_model(cpu, sizeof cpu);
    bench_utc_now(date, sizeof date);
    bench_load_average(load, sizeof load);
    emit("# remat's MILP against CBC\n\nProduced by:\n\n```sh\n%s\n```\n\n"
         "- date: %s\n- machine: %ld CPUs (nproc), %s\n- load average at the start: %s (times are wall clock)\n"
         "- CBC %s, run as `cbc MODEL.mps -timeMode elapsed -sec %g -solve -solu SOL` on the MILP remat solves "
         "(lp_model.h, RM_MILP_DEFAULT, S and R binary) written by lp_solve's write_freemps; not run above %ld "
         "nodes or %ld columns\n- remat: `rm_strategy_run(\"milp\")`, as `remat plan --strategy milp`, time limit %g "
         "s\n\n"
         "Columns: cols, the MILP's columns (CBC's model; remat solves problems above 80 nodes on a coarsened "
         "graph). Cheapest heuristic: the cheapest baseline that fits (the MILP's incumbent). Bound: a proved "
         "floor ('trivial': every node once, not an LP bound). To proof: remat's time where it proved "
         "optimality. CBC time: wall clock of the cbc process. Ratio: remat's time to proof over CBC's, where "
         "both proved. Check: CBC's solution (its S, the cheapest R) is judged by remat's simulator, and each "
         "solver's proved claims are checked against the other's answer; DISAGREE says which failed.\n",
         cmd, date, sysconf(_SC_NPROCESSORS_ONLN), cpu, load, version, c->time_limit_s, c->max_nodes, c->max_cols,
         c->time_limit_s);
    emit_flush();
}

int main(int argc, char **argv)
{
    cbc_cfg c = {
        60, 0,           NULL, REMAT_SOURCE_DIR "/models", "cbc", NULL, NULL, DEFAULT_MAX_NODES, DEFAULT_MAX_COLS, 50,
        0,  RM_TABLE_MD, NULL};
    const char *out = NULL;
    int rc = parse_args(&c, &out, argc, argv);
    if (rc) {
        if (rc < 0) printf("%s", USAGE);
        return rc < 0 ? 0 : rc;
    }
    char version[64], tmp[] = "/tmp/remat_cbc_XXXXXX";
    if (!cbc_present(&c, version, sizeof version)) {
        fprintf(stderr, "remat_bench_cbc: '%s' does not run; install CBC (bench/cbc.sh does: coinor-cbc)\n", c.cbc);
        return 1;
    }
    if (!c.workdir && !(c.workdir = mkdtemp(tmp))) {
        perror("remat_bench_cbc: mkdtemp");
        return 1;
    }
    if (mkdir(c.workdir, 0777) && errno != EEXIST) {
        perror(c.workdir);
        return 1;
    }
    if (out && emit_open(out)) return 1;
    double t0 = rm_now();
    /* csv / json: the rows alone; the prose around them is markdown's. */
    bench_table data;
    if (c.fmt != RM_TABLE_MD) {
        emit_mute(1);
        if (cbc_data_begin(&data, c.fmt)) return 2;
        c.data = &data;
    }
    print_header(&c, argc, argv, version);
    cbc_totals t[CBC_NFAM];
    memset(t, 0, sizeof t);
    rc = cbc_run_all(&c, t);
    if (c.data && bench_table_end(c.data) && !rc) rc = 2;
    cbc_totals_print(t);
    char load[64];
    bench_load_average(load, sizeof load);
    emit("\nTotal wall clock %.0f s; load average at the end: %s.\n", rm_now() - t0, load);
    emit_flush();
    for (int f = 0; f < CBC_NFAM; f++) cbc_totals_free(&t[f]);
    if (c.workdir == tmp && !c.keep_files && rmdir(tmp)) perror(tmp);
    if (emit_close() && !rc) rc = 2;
    return rc;
}
