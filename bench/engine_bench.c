/* remat_bench_engine: the MILP's engines side by side. For each instance
 * (engine_instances.c) remat solves through the "milp" strategy with each
 * engine (lp_solve, CBC in-process, auto) and through "best", as users get
 * them, and HiGHS (PyPI highspy, bench/highs_solve.py, from the bench's own
 * virtual environment that bench/engine.sh makes) solves the model that
 * remat's MILP is (lp_model.h, RM_MILP_DEFAULT, S and R binary) written as
 * MPS; the table gives every answer, bound and time, and the times to proof
 * over lp_solve's. A benchmark, never a test: HiGHS is never something the
 * build, the demo or the tests need, and without it the column says so.
 *
 * This file: the options, the document's header and main. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "clock.h"
#include "cores.h"
#include "engine_bench.h"
#include "milp_engine.h"

#ifndef REMAT_SOURCE_DIR
#define REMAT_SOURCE_DIR "."
#endif

/* Where HiGHS is not run (the CBC program's caps, measured with it). The budget rows make the model ~n^3 nonzeros:
 * measured here, ResNet-18 (147 nodes) is 45818 columns, a 97 MB MPS file
 * and 0.9 GB resident, and the CBC program with a 5 s limit took 11-45 s (reading and
 * its root) without finding a solution; ResNet-34 (267 nodes) would be ~6x
 * that, ResNet-50 (367) ~15x. So the full models stop at ResNet-18 / U-Net
 * (141 nodes) by default; --max-nodes 0 --max-cols 0 lifts both caps. */
#define DEFAULT_MAX_COLS 200000L
#define DEFAULT_MAX_NODES 150L

#define USAGE                                                                                                          \
    "usage: remat_bench_engine [--quick] [--time-limit S] [--only models|linear|random] [--out FILE]\n"                \
    "                          [--engines LIST] [--models LIST] [--pcts LIST] [--linear LIST] [--random N]\n"          \
    "                          [--highs PYTHON] [--max-nodes N] [--max-cols N] [--workdir DIR] [--keep-files]\n"       \
    "                          [--models-dir DIR] [--format md|csv|json]\n"                                            \
    "\n"                                                                                                               \
    "The MILP's engines side by side: remat's milp with lp_solve, cbc and auto, the best strategy, and HiGHS\n"        \
    "on the same MILP; markdown on stdout (and in --out FILE, written instance by instance), progress on\n"            \
    "stderr.\n"                                                                                                        \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --quick          a few small instances (seconds): a smoke run; time limit 10 s unless given\n"                  \
    "  --time-limit S   wall-clock seconds for each engine on each instance (default 60; 0 = none)\n"                  \
    "  --only FAMILY    models, linear or random (default: all three)\n"                                               \
    "  --out FILE       also write the output to FILE (e.g. docs/bench/engines.md)\n"                                  \
    "  --engines LIST   columns to run, of lp_solve,cbc,auto,race,best,highs (default: all but race, the\n"            \
    "                   race of both engines forced below auto's size threshold)\n"                                    \
    "  --models LIST    built-in models to run, e.g. vgg16,unet (default: every non-tiny one)\n"                       \
    "  --pcts LIST      the models' budgets, % of the no-remat peak (default 90,80,70,60)\n"                           \
    "  --linear LIST    layers of the linear graphs (default 8,16,24)\n"                                               \
    "  --random N       how many random DAGs (default 50; --quick 3)\n"                                                \
    "  --highs PYTHON   a python with highspy (bench/engine.sh passes its venv's); without it, or when it\n"           \
    "                   cannot import highspy, the HiGHS column says 'not installed'\n"                                \
    "  --max-nodes N    do not even build the MILP for HiGHS above N nodes (default 150; 0 = no cap)\n"                \
    "  --max-cols N     do not run HiGHS on models with more columns (default 200000; 0 = no cap)\n"                   \
    "  --workdir DIR    where the MPS and solution files go (default: a fresh directory in /tmp)\n"                    \
    "  --keep-files     keep them (one per instance)\n"                                                                \
    "  --models-dir DIR where model names are looked up (default: the source tree's models/)\n"                        \
    "  --format F       md (the default): the markdown document; csv or json: only the instances' rows, one\n"         \
    "                   table over every family, each value its own column (costs in the instance's unit,\n"           \
    "                   with checkpoint_all_cost to make overheads of them); no header, prose or totals\n"

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "remat_bench_engine: %s%s%s\n\n%s", msg, arg ? " " : "", arg ? arg : "", USAGE);
    return 1;
}

/* --engines: a comma-separated list of column names into a bit set. */
static int parse_engines(unsigned *mask, const char *list)
{
    *mask = 0;
    for (const char *s = list; s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
        size_t len = strcspn(s, ",");
        int k = 0;
        while (k < E_N && (strlen(engine_keys[k]) != len || strncmp(s, engine_keys[k], len))) k++;
        if (k == E_N) return -1;
        *mask |= 1u << k;
    }
    return *mask ? 0 : -1;
}

/* A comma-separated list of numbers, each in [lo, hi] (at most 16). */
static int numbers_ok(const char *list, double lo, double hi)
{
    int n = 0;
    for (const char *s = list; s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || (*end && *end != ',') || v < lo || v > hi || ++n > 16) return 0;
    }
    return 1;
}

/* Flags, then options with a value; 0, 1 (usage error) or -1 (--help). */
static int parse_args(engine_cfg *c, const char **out, int argc, char **argv)
{
    const char *time_s = NULL, *cols_s = NULL, *nodes_s = NULL, *random_s = NULL, *format_s = NULL, *engines_s = NULL;
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
        else if (rm_cli_option(&v, argc, argv, &i, "--highs"))
            slot = &c->python;
        else if (rm_cli_option(&v, argc, argv, &i, "--engines"))
            slot = &engines_s;
        else if (rm_cli_option(&v, argc, argv, &i, "--pcts"))
            slot = &c->pcts;
        else if (rm_cli_option(&v, argc, argv, &i, "--linear"))
            slot = &c->linear;
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
    if (engines_s && parse_engines(&c->engines, engines_s))
        return usage_error("--engines takes a list of lp_solve, cbc, auto, race, best and highs, not", engines_s);
    if (c->pcts && !numbers_ok(c->pcts, 1, 100))
        return usage_error("--pcts takes percentages in (0, 100], comma-separated, not", c->pcts);
    if (c->linear && !numbers_ok(c->linear, 2, 200))
        return usage_error("--linear takes layer counts of 2 to 200, comma-separated, not", c->linear);
    /* The paths go into a shell command between single quotes. */
    if ((c->python && strchr(c->python, '\'')) || (c->workdir && strchr(c->workdir, '\'')))
        return usage_error("--highs and --workdir may not contain a quote", NULL);
    return 0;
}

/* HiGHS's version from the python given, or 0 when it cannot import highspy:
 * the column then says "not installed" and the bench goes on. */
static int highs_present(const engine_cfg *c, char *version, size_t len)
{
    char cmd[8400], line[256];
    snprintf(version, len, "not installed");
    if (!c->python) return 0;
    snprintf(cmd, sizeof cmd, "'%s' '%s' --version 2>/dev/null", c->python, c->highs_script);
    FILE *f = popen(cmd, "r");
    if (!f) return 0;
    int got = 0;
    while (fgets(line, sizeof line, f)) /* after HiGHS's banner */
        if (!strncmp(line, "version: ", 9))
            got = snprintf(version, len, "%.*s", (int)strcspn(line + 9, "\r\n"), line + 9);
    int st = pclose(f);
    return got && st == 0;
}

static void print_header(const engine_cfg *c, int argc, char **argv, const char *version)
{
    char cmd[4096], cpu[256], date[64], load[64], engines[128] = "";
    bench_command_line(cmd, sizeof cmd, argc, argv);
    bench_cpu_model(cpu, sizeof cpu);
    bench_utc_now(date, sizeof date);
    bench_load_average(load, sizeof load);
    for (int k = 0; k < E_N; k++)
        if (c->engines & (1u << k))
            snprintf(engines + strlen(engines), sizeof engines - strlen(engines), "%s%s", engines[0] ? ", " : "",
                     engine_names[k]);
    const char *why = NULL;
    rm_milp_engine a = rm_milp_engine_resolve(RM_MILP_ENGINE_AUTO, RM_MILP_RACE_MIN_NODES, 0, &why);
    emit("# The MILP's engines side by side\n\nProduced by:\n\n```sh\n%s\n```\n\n"
         "- date: %s\n- machine: %ld CPUs online, %d usable by this run (sched_getaffinity), %s\n"
         "- load average at the start: %s (times are wall clock)\n"
         "- columns run: %s; time limit %g s for each, on each instance\n"
         "- lp_solve, cbc, auto: `rm_strategy_run(\"milp\")` with rm_strategy_options.milp_engine, as `remat "
         "plan --strategy milp --milp-engine E`; auto runs %s here on problems of %d nodes or more (below: "
         "lp_solve); CBC: %s\n"
         "- race (when asked): `rm_strategy_run(\"milp\")` with RM_MILP_ENGINE_BOTH, both engines at once whatever "
         "the size\n- best: `rm_strategy_run(\"best\")`, engine auto, as `remat plan`\n"
         "- HiGHS %s (highspy, one thread, mip_rel_gap 1e-9) on the MILP remat solves (lp_model.h, "
         "RM_MILP_DEFAULT, S and R binary) written by lp_solve's write_freemps; not run above %ld nodes or %ld "
         "columns. Its time is its read and solve, Python's start excluded\n\n"
         "Cells: each engine's answer (cost: overhead over checkpoint-all; **optimal** when proved; else the gap "
         "to its proved bound, 'trivial' where that bound is every node once) and its wall-clock seconds, with "
         "the time to proof over lp_solve's in parentheses where both proved. remat solves problems above 80 "
         "nodes on a coarsened graph; HiGHS always solves the whole MILP (cols: its columns). Cheapest "
         "heuristic: the cheapest baseline that fits (the MILP's incumbent). Check: HiGHS's solution (its S, "
         "the cheapest R) is judged by remat's simulator, and every engine's proved claims are checked against "
         "every other's answer; DISAGREE says which failed.\n",
         cmd, date, sysconf(_SC_NPROCESSORS_ONLN), rm_usable_cores(), cpu, load, engines, c->time_limit_s,
         rm_milp_engine_name(a), RM_MILP_RACE_MIN_NODES,
         rm_milp_engine_have_cbc() ? "built in" : "NOT built in (cbc and auto run lp_solve)", version, c->max_nodes,
         c->max_cols);
    emit_flush();
}

int main(int argc, char **argv)
{
    engine_cfg c;
    memset(&c, 0, sizeof c);
    c.time_limit_s = 60;
    c.models_dir = REMAT_SOURCE_DIR "/models";
    c.max_nodes = DEFAULT_MAX_NODES;
    c.max_cols = DEFAULT_MAX_COLS;
    c.random = 50;
    c.engines = ENGINE_DEFAULT_COLUMNS;
    c.highs_script = REMAT_SOURCE_DIR "/bench/highs_solve.py";
    c.fmt = RM_TABLE_MD;
    const char *out = NULL;
    int rc = parse_args(&c, &out, argc, argv);
    if (rc) {
        if (rc < 0) printf("%s", USAGE);
        return rc < 0 ? 0 : rc;
    }
    char version[64] = "not asked (--engines)", tmp[] = "/tmp/remat_engine_XXXXXX";
    if ((c.engines & (1u << E_HIGHS)) && !highs_present(&c, version, sizeof version)) {
        fprintf(stderr,
                "remat_bench_engine: HiGHS: not installed (%s%s; bench/engine.sh installs it); its column says so\n",
                c.python ? c.python : "no --highs python given", c.python ? " cannot import highspy" : "");
        c.python = NULL;
    }
    if (!c.workdir && !(c.workdir = mkdtemp(tmp))) {
        perror("remat_bench_engine: mkdtemp");
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
        if (engine_data_begin(&data, c.fmt)) return 2;
        c.data = &data;
    }
    print_header(&c, argc, argv, version);
    engine_totals t[ENG_NFAM];
    memset(t, 0, sizeof t);
    rc = engine_run_all(&c, t);
    if (c.data && bench_table_end(c.data) && !rc) rc = 2;
    engine_totals_print(&c, t);
    char load[64];
    bench_load_average(load, sizeof load);
    emit("\nTotal wall clock %.0f s; load average at the end: %s.\n", rm_now() - t0, load);
    emit_flush();
    for (int f = 0; f < ENG_NFAM; f++) engine_totals_free(&t[f]);
    if (c.workdir == tmp && !c.keep_files && rmdir(tmp)) perror(tmp);
    if (emit_close() && !rc) rc = 2;
    return rc;
}
