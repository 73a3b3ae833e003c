/* Helpers shared by the remat subcommands (see cli_util.h). Parsing is
 * strict on purpose: a budget of "16G" or "1e9x" is a typo, and guessing
 * what the user meant would silently schedule for the wrong memory. */
#include "cli_util.h"
#include "clock.h"
#include "trainer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "builder.h"
#include "launcher.h"
#include "order.h"
#include "trace.h"

int rm_cli_option(const char **out, int argc, char **argv, int *a, const char *opt)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*a], opt, n)) return 0;
    if (argv[*a][n] == '=') {
        *out = argv[*a] + n + 1;
        return 1;
    }
    if (argv[*a][n] != '\0') return 0;
    if (*a + 1 >= argc) {
        *out = NULL;
        return 1;
    }
    *out = argv[++*a];
    return 1;
}

int rm_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
    /* Under mpirun every rank parses the same command line: one says it. */
    if (rm_launched_rank() > 0) return 1;
    va_list ap;
    va_start(ap, fmt);
    rm_text_fprintf(stderr, "remat %s: ", cmd);
    rm_text_vfprintf(stderr, fmt, ap);
    va_end(ap);
    /* The synopsis (the usage up to its first blank line), not the whole
     * help: after 70 lines of it the message was off the screen. */
    const char *end = strstr(usage, "\n\n");
    int len = end ? (int)(end - usage) : (int)strlen(usage);
    rm_text_fprintf(stderr, "\n\n%.*s\n\n`remat %s --help` describes every option.\n", len, usage, cmd);
    return 1;
}

int rm_cli_parse_options(const rm_cli_opt *opts, size_t n, int argc, char **argv, const char *cmd, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        const rm_cli_opt *o = NULL;
        const char *v = NULL;
        for (size_t k = 0; k < n && !o; k++) {
            if (opts[k].flag) {
                /* A flag matches only exactly: "--quiet=1" is a typo, not a value. */
                if (!strcmp(argv[i], opts[k].name) || (opts[k].short_name && !strcmp(argv[i], opts[k].short_name)))
                    o = &opts[k];
            } else if (rm_cli_option(&v, argc, argv, &i, opts[k].name)) {
                o = &opts[k];
            }
        }
        if (!o) return rm_cli_usage_error(cmd, usage, "unknown argument '%s'", argv[i]);
        if (o->flag) {
            /* Refused like a value given twice: "-q -q" is no quieter (a
             * flag has no level to raise), so it is a slip worth saying. */
            if (*o->flag) return rm_cli_usage_error(cmd, usage, "%s given twice", o->name);
            *o->flag = 1;
            continue;
        }
        if (!v || !*v) return rm_cli_usage_error(cmd, usage, "%s needs a value", o->name);
        /* "--out --quiet": the value forgotten, the next option taken for it
         * (a file named --quiet written, the flag lost). A value that is one
         * of this command's options, given as the next argument, is refused;
         * "--out=--quiet" or "--out ./--quiet" still mean that file. */
        if (v == argv[i] && v[0] == '-')
            for (size_t k = 0; k < n; k++) {
                size_t len = strlen(opts[k].name);
                if ((!strncmp(v, opts[k].name, len) && (v[len] == '\0' || v[len] == '=')) ||
                    (opts[k].short_name && !strcmp(v, opts[k].short_name)))
                    return rm_cli_usage_error(
                        cmd, usage, "%s needs a value, not the option %s (for a file of that name, write ./%s)",
                        o->name, opts[k].name, v);
            }
        /* A second value would silently win over the first; say so instead. */
        if (*o->value) return rm_cli_usage_error(cmd, usage, "%s given twice", o->name);
        *o->value = v;
    }
    return 0;
}

const char *rm_cli_group_digits(char *buf, size_t len, unsigned long long v)
{
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%llu", v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

/* Units up to exbi/exa: a problem holds up to 2^62 bytes (4 EiB). */
#define BYTE_UNITS 7

static const char *bytes_in(char *buf, size_t len, double b, double step, const char *const units[BYTE_UNITS])
{
    int u = 0;
    while (b >= step && u < BYTE_UNITS - 1) {
        b /= step;
        u++;
    }
    snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", b, units[u]);
    return buf;
}

const char *rm_cli_bytes(char *buf, size_t len, double b)
{
    static const char *const units[BYTE_UNITS] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    return bytes_in(buf, len, b, 1024.0, units);
}

const char *rm_cli_bytes_si(char *buf, size_t len, double b)
{
    static const char *const units[BYTE_UNITS] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    return bytes_in(buf, len, b, 1000.0, units);
}

int rm_cli_parse_long(long *out, const char *s, long lo, long hi)
{
    if (!s || !isdigit((unsigned char)s[0])) return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int rm_cli_parse_batch(long *out, const char *s, char *why, size_t len)
{
    if (!rm_cli_parse_long(out, s, 1, RM_MAX_BATCH)) return 0;
    snprintf(why, len, "--batch must be an integer from 1 to %d, got '%s'", RM_MAX_BATCH, s ? s : "");
    return -1;
}

int rm_cli_parse_device(rm_backend_kind *out, const char *name, char *why, size_t len)
{
    rm_err e = {RM_OK, ""};
    *out = RM_BACKEND_DEFAULT;
    if (!name || !rm_backend_find(out, name, &e)) return 0;
    char choices[128];
    snprintf(why, len, "--device must be %s, got '%s'", rm_backend_list(choices, sizeof choices), name);
    return -1;
}

int rm_cli_parse_backend_options(rm_backend_options *out, const char *kernels, const char *cpu_kernels,
                                 const char *threads, rm_backend_kind device, char *why, size_t len)
{
    memset(out, 0, sizeof *out);
    rm_err e = {RM_OK, ""};
    const rm_backend_info *b = rm_backend_info_of(device);
    if (cpu_kernels && strcmp(b->name, "cpu")) {
        snprintf(why, len, "--cpu-kernels is for --device cpu (--kernels names the %s kernel library)", b->name);
        return -1;
    }
    /* Both names given: one answer or a refusal, never a silent winner. */
    if (kernels && cpu_kernels && strcmp(kernels, cpu_kernels)) {
        snprintf(why, len, "--kernels %s and --cpu-kernels %s (its older name) disagree: give one", kernels,
                 cpu_kernels);
        return -1;
    }
    const char *flag = kernels ? "--kernels" : "--cpu-kernels";
    if (!kernels) kernels = cpu_kernels;
    if (kernels && rm_backend_kernels_parse(&out->kernels, device, kernels, &e)) {
        snprintf(why, len, "%s: %s", flag, e.msg);
        return -1;
    }
    out->set_kernels = kernels != NULL;
    if (threads && !b->has_threads) {
        snprintf(why, len, "--threads is for --device cpu (the %s backend has no host threads)", b->name);
        return -1;
    }
    if (threads && rm_backend_threads_parse(&out->threads, threads, &e)) {
        snprintf(why, len, "--threads: %s", e.msg);
        return -1;
    }
    return 0;
}

/* Length of the plain decimal number at s: digits, an optional fraction and
 * exponent. strtod alone would also take "inf", "nan", hex and spaces. */
size_t rm_cli_number_prefix(const char *s)
{
    size_t i = 0, digits = 0;
    while (isdigit((unsigned char)s[i])) i++, digits++;
    if (s[i] == '.') {
        i++;
        while (isdigit((unsigned char)s[i])) i++, digits++;
    }
    if (!digits) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j])) j++;
            i = j;
        }
    }
    return i;
}

int rm_cli_parse_seconds(double *out, const char *s)
{
    if (!s) return -1;
    size_t n = rm_cli_number_prefix(s);
    if (!n || s[n]) return -1;
    double v = strtod(s, NULL);
    if (!isfinite(v) || v < 0) return -1;
    *out = v;
    return 0;
}

int rm_cli_parse_solver_limits(double *seconds, long *nodes, const char *time_limit, const char *node_limit, char *why,
                               size_t len)
{
    if (time_limit && rm_cli_parse_seconds(seconds, time_limit)) {
        snprintf(why, len, "--time-limit must be a number of seconds >= 0, got '%s'", time_limit);
        return -1;
    }
    if (node_limit && rm_cli_parse_long(nodes, node_limit, 0, 1000000000000L)) {
        snprintf(why, len, "--node-limit must be a whole number >= 0, got '%s'", node_limit);
        return -1;
    }
    return 0;
}

int rm_cli_parse_milp_engine(rm_milp_engine *k, const char *s, char *why, size_t len)
{
    *k = RM_MILP_ENGINE_AUTO;
    if (!s) return 0;
    rm_err e = {RM_OK, ""};
    if (rm_milp_engine_parse(k, s, &e) == RM_OK) return 0;
    snprintf(why, len, "%s, got '%s'", e.msg, s);
    return -1;
}

/* The units a budget may carry: the suffix (case-insensitive) and its bytes. */
static const struct {
    const char *suffix;
    unsigned long long scale;
} budget_units[] = {
    {"", 1},
    {"b", 1},
    {"kib", 1ULL << 10},
    {"mib", 1ULL << 20},
    {"gib", 1ULL << 30},
    {"tib", 1ULL << 40},
    {"pib", 1ULL << 50},
    {"eib", 1ULL << 60},
    {"kb", 1000ULL},
    {"mb", 1000000ULL},
    {"gb", 1000000000ULL},
    {"tb", 1000000000000ULL},
    {"pb", 1000000000000000ULL},
    {"eb", 1000000000000000000ULL},
}; /* every unit rm_cli_bytes and rm_cli_bytes_si print, so a size remat shows can be given back */

/* The bytes of the number s[0..n) of units of scale: exact when it is a
 * whole number (a double would round 4611686018427387903 to 2^62), else
 * rounded down. -1 when more than RM_PROBLEM_MAX_BYTES. */
static int budget_amount(size_t *out, const char *s, size_t n, unsigned long long scale)
{
    if (strspn(s, "0123456789") == n) {
        errno = 0;
        unsigned long long v = strtoull(s, NULL, 10);
        if (errno == ERANGE || v > RM_PROBLEM_MAX_BYTES / scale) return -1;
        *out = (size_t)(v * scale);
        return 0;
    }
    double v = floor(strtod(s, NULL) * (double)scale);
    if (!(v <= (double)RM_PROBLEM_MAX_BYTES)) return -1;
    *out = (size_t)v;
    return 0;
}

/* Why suffix (after the number s[0..n)) is no unit of budget_units. */
static void unknown_unit(char *why, size_t len, const char *s, size_t n, const char *suffix)
{
    if (strlen(suffix) == 1 && strchr("kKmMgGtTpPeE", suffix[0]))
        snprintf(why, len, "'%s' is ambiguous: say %.*s%ciB (powers of 1024) or %.*s%cB (powers of 1000)", s, (int)n, s,
                 toupper((unsigned char)suffix[0]), (int)n, s, toupper((unsigned char)suffix[0]));
    else
        snprintf(why, len,
                 "unknown unit '%s' in '%s' (use B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB, EB or %%)",
                 suffix, s);
}

int rm_cli_parse_budget(rm_cli_budget *out, const char *s, char *why, size_t len)
{
    if (!s || !*s) {
        snprintf(why, len, "an empty budget");
        return -1;
    }
    size_t n = rm_cli_number_prefix(s);
    if (!n) {
        snprintf(why, len, "'%s' does not start with a number (examples: 6GiB, 512MiB, 1.5e9, 80%%)", s);
        return -1;
    }
    double v = strtod(s, NULL);
    const char *suffix = s + n;
    if (v <= 0) {
        snprintf(why, len, "'%s' is not a positive amount", s);
        return -1;
    }
    if (!strcmp(suffix, "%")) {
        if (!(v <= 100000)) {
            snprintf(why, len, "'%s' is more than 100000%% of the peak", s);
            return -1;
        }
        *out = rm_cli_budget_percent(v);
        return 0;
    }
    size_t k = 0, nunits = sizeof budget_units / sizeof budget_units[0];
    while (k < nunits && strcasecmp(suffix, budget_units[k].suffix)) k++;
    if (k == nunits) {
        unknown_unit(why, len, s, n, suffix);
        return -1;
    }
    if (!*suffix && v < RM_CLI_BARE_BYTES_MIN) {
        snprintf(why, len,
                 "'%s' has no unit: write %sB for %s bytes, or a size (%sGiB, %sGB) or a percentage of the no-remat "
                 "peak (%s%%); a number without a unit is bytes only from %d up",
                 s, s, s, s, s, s, RM_CLI_BARE_BYTES_MIN);
        return -1;
    }
    if (budget_units[k].scale == 1 && v != floor(v)) {
        /* 9.5B would be cut to 9 bytes without a word. */
        snprintf(why, len, "'%s' is not a whole number of bytes", s);
        return -1;
    }
    size_t bytes;
    if (budget_amount(&bytes, s, n, budget_units[k].scale)) {
        snprintf(why, len, "'%s' is too large: budgets go up to 2^62 bytes (4 EiB), more than any problem holds", s);
        return -1;
    }
    if (bytes < 1) {
        snprintf(why, len, "'%s' is less than one byte", s);
        return -1;
    }
    *out = rm_cli_budget_of(bytes);
    return 0;
}

rm_cli_budget rm_cli_budget_of(size_t bytes)
{
    return (rm_cli_budget){0, 0, bytes};
}

rm_cli_budget rm_cli_budget_percent(double pct)
{
    return (rm_cli_budget){1, pct, 0};
}

size_t rm_cli_budget_bytes(const rm_cli_budget *b, size_t reference)
{
    return b->percent ? rm_budget_percent_bytes(b->pct, reference) : b->bytes;
}

const char *rm_cli_budget_pct(char *buf, size_t len, const rm_cli_budget *b, size_t budget, size_t reference)
{
    double ref = (double)reference, want = floor(ref * b->pct / 100.0);
    /* The percentage given, unless rm_budget_percent_bytes clamped the bytes
     * it gives (to 1, or to 2^62; budget is what it gave): then the one used,
     * and why, so that no line states a budget remat does not use. */
    if ((double)budget == want)
        snprintf(buf, len, "%g%% of the no-remat peak", b->pct);
    else
        snprintf(buf, len, "%.4g%% of the no-remat peak: %g%% of it is %s, so %s", 100.0 * (double)budget / ref, b->pct,
                 want < 1 ? "less than a byte" : "more than 2^62 bytes",
                 want < 1 ? "1 byte" : "capped at 2^62 bytes (4 EiB), the largest budget");
    return buf;
}

/* lp_solve at NORMAL verbosity says a lot about its simplex; what a person
 * waiting for a solve wants is: the LP is solved, a better schedule was
 * found after so many nodes, the search stopped. Those lines are kept (with
 * lp_solve's scaled objective values left out: they are not costs), and our
 * own lines (no lp_solve wording) pass through. */
void rm_cli_progress_log(void *ctx, const char *line)
{
    const rm_cli_progress *pr = ctx;
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
    size_t skip = 0;
    while (skip < n && (line[skip] == '\n' || line[skip] == ' ')) skip++;
    if (skip >= n) return;
    char text[512];
    snprintf(text, sizeof text, "%.*s", (int)(n - skip), line + skip);
    char msg[600];
    const char *sol = strstr(text, " solution ");
    const char *nodes = strstr(text, " nodes");
    if (!strncmp(text, "incumbent", 9) || !strncmp(text, "milp:", 5) || !strncmp(text, "lp_round:", 9) ||
        !strncmp(text, "best:", 5)) {
        /* Our own lines (the incumbent, coarsening) are already readable. */
        snprintf(msg, sizeof msg, "%s", text);
    } else if (strstr(text, "is B&B base")) {
        snprintf(msg, sizeof msg, "LP relaxation solved; branch and bound starts");
    } else if (strstr(text, "stopped by the user")) {
        snprintf(msg, sizeof msg, "stopped at the limit");
    } else if (sol && nodes && sol < nodes) {
        /* "Improved solution 0.85 after 30146 iter, 749 nodes (gap 81.8%)" */
        const char *d = nodes;
        while (d > text && d[-1] >= '0' && d[-1] <= '9') d--;
        snprintf(msg, sizeof msg, "branch and bound: %.*s solution after %.*s nodes", (int)(sol - text), text,
                 (int)(nodes - d), d);
    } else if (sol && !strncmp(text, "Optimal solution", 16) && strstr(text, "iter")) {
        snprintf(msg, sizeof msg, "LP relaxation solved");
    } else {
        return;
    }
    rm_text_fprintf(stderr, "  %s [%6.1f s] %s\n", pr->prefix, rm_now() - pr->t0, msg);
}

const char *rm_cli_seconds(char *buf, size_t len, double s)
{
    double a = s < 0 ? -s : s;
    if (a >= 1 || a == 0)
        snprintf(buf, len, "%.3g s", s);
    else if (a >= 1e-3)
        snprintf(buf, len, "%.3g ms", s * 1e3);
    else if (a >= 1e-6)
        snprintf(buf, len, "%.3g us", s * 1e6);
    else
        snprintf(buf, len, "%.3g ns", s * 1e9);
    return buf;
}

const char *rm_cli_flops(char *buf, size_t len, double flops)
{
    static const char *const units[] = {"FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs"};
    double a = flops < 0 ? -flops : flops;
    int u = 0;
    /* 999.5 would round up to "1000": it is already the next unit's 1.00. */
    while (u < 4 && a >= 999.5) {
        a /= 1000;
        flops /= 1000;
        u++;
    }
    /* Whole FLOP counts below a thousand stay whole: "512 FLOPs", not "512." */
    int decimals = a >= 99.95 || (u == 0 && a == floor(a)) ? 0 : a >= 9.995 ? 1 : 2;
    snprintf(buf, len, "%.*f %s", decimals, flops, units[u]);
    return buf;
}

const char *rm_cli_cost(char *buf, size_t len, double cost, int flops)
{
    if (flops == RM_CLI_COST_SECONDS) return rm_cli_seconds(buf, len, cost);
    if (flops == RM_CLI_COST_FLOPS) return rm_cli_flops(buf, len, cost);
    snprintf(buf, len, "%.6g", cost);
    return buf;
}

int rm_cli_model_check(rm_cli_model *a, const char *cmd, const char *usage)
{
    if (a->model && a->onnx) return rm_cli_usage_error(cmd, usage, "give --model or --onnx, not both");
    if (!a->onnx && (a->loss || a->init))
        return rm_cli_usage_error(cmd, usage,
                                  "%s goes with --onnx (a config file names its own loss and has no "
                                  "weights)",
                                  a->loss ? "--loss" : "--init");
    a->path = a->onnx ? a->onnx : a->model;
    rm_onnx_options_default(&a->onnx_opt);
    /* "auto" is for tests: a command says which loss it trains. */
    if (a->loss && (rm_onnx_loss_parse(&a->onnx_opt.loss, a->loss) || a->onnx_opt.loss == RM_ONNX_LOSS_AUTO))
        return rm_cli_usage_error(cmd, usage, "--loss must be softmax_xent or pixel_softmax_xent, got '%s'", a->loss);
    if (a->init && strcmp(a->init, "onnx") && strcmp(a->init, "random"))
        return rm_cli_usage_error(cmd, usage, "--init must be onnx or random, got '%s'", a->init);
    a->onnx_opt.random_init = a->init && !strcmp(a->init, "random");
    return 0;
}

/* The import's notes, one line each, to a FILE. */
/* A line of the ONNX import's notes: it quotes the model's own names. */
static void note_line(void *ctx, const char *line)
{
    fputs("  ", (FILE *)ctx);
    rm_name_fputs((FILE *)ctx, line);
    fputc('\n', (FILE *)ctx);
}

int rm_cli_model_load(rm_model **out, const char *cmd, const rm_cli_model *a, int height, int width, FILE *report)
{
    *out = NULL;
    rm_err e = {RM_OK, ""};
    rm_onnx_options o = a->onnx_opt;
    rm_onnx_summary sum;
    memset(&sum, 0, sizeof sum);
    if (a->onnx && report) {
        rm_text_fprintf(report, "onnx         %s: the import, node by node\n", a->path);
        o.note = note_line;
        o.note_ctx = report;
    }
    if (rm_model_open(out, a->path, a->onnx ? &o : NULL, height, width, &sum, &e)) {
        /* The importer's messages quote the model's own names. */
        rm_text_fprintf(stderr, "remat %s: ", cmd);
        rm_text_fputs(stderr, e.msg);
        fputc('\n', stderr);
        size_t len = strlen(a->path);
        if (!a->onnx && len > 5 && !strcmp(a->path + len - 5, ".onnx"))
            rm_text_fprintf(stderr, "remat %s: an ONNX file is given with --onnx, not --model\n", cmd);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    if (!a->onnx) return 0;
    char w[32];
    rm_text_fprintf(report ? report : stderr,
                    "%s%s: %s, opset %lld: %d nodes -> %d layers (the loss added), %d folded, %d aliases, %d dropped; "
                    "%s weights from its initializers%s\n",
                    report ? "onnx         " : "remat: imported ", a->path,
                    *sum.producer ? rm_name_shown_of(sum.producer).s : "unknown producer", (long long)sum.opset,
                    sum.nodes, sum.layers, sum.folded, sum.aliases, sum.dropped,
                    rm_cli_group_digits(w, sizeof w, sum.weights), o.random_init ? " (--init random: not kept)" : "");
    return 0;
}

int rm_cli_problem_load(rm_cli_problem *out, const char *cmd, const char *model, long batch, const char *problem_path)
{
    rm_cli_model m;
    memset(&m, 0, sizeof m);
    m.model = m.path = model;
    return rm_cli_problem_load_costs(out, cmd, &m, batch, problem_path, NULL);
}

int rm_cli_problem_load_costs(rm_cli_problem *out, const char *cmd, const rm_cli_model *model, long batch,
                              const char *problem_path, const char *costs_path)
{
    memset(out, 0, sizeof *out);
    rm_err e = {RM_OK, ""};
    int rc;
    rm_cost_file *costs = NULL;
    if (costs_path && rm_cost_file_read(&costs, costs_path, &e)) {
        rm_text_fprintf(stderr, "remat %s: %s\n", cmd, e.msg);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    if (model && model->path) {
        rm_model *m = NULL;
        if ((rc = rm_cli_model_load(&m, cmd, model, 0, 0, NULL))) {
            rm_cost_file_free(costs);
            return rc;
        }
        /* The accounting `remat train` uses (SGD with momentum), so a plan
         * made here is one the executor can run within the same budget. */
        out->optim = rm_optim_options_default(RM_OPTIM_SGD);
        rc = rm_training_problem(&out->p, &out->fp, m, (int)batch, &out->optim, NULL, costs, RM_COST_SAME_BATCH, &e);
        out->has_footprint = !rc;
        rm_model_free(m);
        if (rc) {
            rm_text_fprintf(stderr, "remat %s: %s\n", cmd, e.msg);
            rm_cost_file_free(costs);
            return e.code == RM_ERR_NOMEM ? 2 : 1;
        }
        snprintf(out->what, sizeof out->what, "%s at batch %ld", model->path, batch);
        out->flops = RM_CLI_COST_FLOPS;
        snprintf(out->cost_model, sizeof out->cost_model, "FLOPs (traced from the model)");
    } else {
        if (rm_problem_read(&out->p, problem_path, &e) ||
            (costs && rm_cost_file_apply(out->p, costs, NULL, 0, RM_COST_SAME_BATCH, &e))) {
            rm_text_fprintf(stderr, "remat %s: %s\n", cmd, e.msg);
            rm_cli_problem_free(out);
            rm_cost_file_free(costs);
            return e.code == RM_ERR_NOMEM ? 2 : 1;
        }
        snprintf(out->what, sizeof out->what, "%s", problem_path);
        out->file_budget = out->p->budget;
        snprintf(out->cost_model, sizeof out->cost_model, "the problem file's costs");
    }
    if (costs) {
        out->flops = RM_CLI_COST_SECONDS;
        snprintf(out->cost_model, sizeof out->cost_model, "profiled seconds from %s (%s, %s at batch %d)", costs_path,
                 costs->device, costs->model, costs->batch);
        rm_cost_file_free(costs);
    }
    if ((rc = rm_problem_report_of(&out->facts, out->p, &e))) {
        rm_text_fprintf(stderr, "remat %s: simulating checkpoint-all failed: %s\n", cmd, e.msg);
        rm_cli_problem_free(out);
        return 2;
    }
    out->verdict = rm_budget_verdict_of(out->p, &out->facts);
    return 0;
}

void rm_cli_problem_free(rm_cli_problem *cp)
{
    rm_problem_free(cp->p);
    cp->p = NULL;
}

int rm_cli_problem_set_budget(rm_cli_problem *cp, const char *cmd, const rm_cli_budget *b)
{
    rm_problem *p = cp->p;
    p->budget = rm_cli_budget_bytes(b, cp->facts.noremat_total);
    cp->verdict = rm_budget_verdict_of(p, &cp->facts);
    if (rm_budget_feasible(cp->verdict)) return 0;
    char why[RM_ERR_MSG_LEN];
    rm_text_fprintf(stderr, "remat %s: %s\n", cmd,
                    rm_budget_reason(why, sizeof why, cp->verdict, p, &cp->facts, rm_cli_bytes));
    return 1;
}

void rm_cli_print_footprint(FILE *out, const rm_footprint *f, const rm_optim_options *o)
{
    char t[32], w[32], g[32], s[32], b[32], l[32], k[32], d[96] = "";
    const char *state = o->kind == RM_OPTIM_ADAM ? "Adam state (m, v)"
                        : o->momentum > 0        ? "SGD momentum"
                                                 : "optimizer state";
    if (f->backend) {
        char x[32];
        snprintf(d, sizeof d, " + backend %s", rm_cli_bytes(x, sizeof x, (double)f->backend));
    }
    if (f->grad_sum) {
        char x[32];
        size_t at = strlen(d);
        snprintf(d + at, sizeof d - at, " + gradient sum %s", rm_cli_bytes(x, sizeof x, (double)f->grad_sum));
    }
    fprintf(out,
            "fixed        %s = weights %s + gradients %s + %s %s + BN statistics %s + labels %s + workspace %s%s\n",
            rm_cli_bytes(t, sizeof t, (double)f->total), rm_cli_bytes(w, sizeof w, (double)f->weights),
            rm_cli_bytes(g, sizeof g, (double)f->grads), state, rm_cli_bytes(s, sizeof s, (double)f->optim),
            rm_cli_bytes(b, sizeof b, (double)f->buffers), rm_cli_bytes(l, sizeof l, (double)f->labels),
            rm_cli_bytes(k, sizeof k, (double)f->workspace), d);
}

void rm_cli_problem_print(const rm_cli_problem *cp, const rm_cli_budget *b)
{
    const rm_problem *p = cp->p;
    int nf = 0, nl = 0, nb = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->nodes[i].tag == RM_TAG_FORWARD)
            nf++;
        else if (p->nodes[i].tag == RM_TAG_LOSS)
            nl++;
        else
            nb++;
    }
    char x[32], y[32], z[32];
    const rm_problem_report *r = &cp->facts;
    double ref = (double)r->noremat_total;
    rm_text_fprintf(stdout, "problem      %s: %d nodes (%d forward, %d loss, %d backward), checkpoint-all costs %s\n",
                    cp->what, p->n, nf, nl, nb, rm_cli_cost(x, sizeof x, r->base_cost, cp->flops));
    rm_text_fprintf(stdout, "costs        %s\n", cp->cost_model);
    if (cp->has_footprint) {
        rm_cli_print_footprint(stdout, &cp->fp, &cp->optim);
    } else {
        printf("fixed        %s, always resident (the problem's own fixed bytes)\n",
               rm_cli_bytes(x, sizeof x, (double)p->fixed_bytes));
    }
    printf("no-remat     %s peak = fixed + %s activations, keeping every value until its last use\n",
           rm_cli_bytes(x, sizeof x, ref), rm_cli_bytes(y, sizeof y, (double)r->noremat.peak_bytes));
    printf("lower bound  %s = fixed + %s (%.1f%%): '%s' with its inputs; no schedule needs less\n",
           rm_cli_bytes(x, sizeof x, (double)(p->fixed_bytes + r->lower_bound)),
           rm_cli_bytes(y, sizeof y, (double)r->lower_bound), 100.0 * (double)(p->fixed_bytes + r->lower_bound) / ref,
           rm_name_shown_of(p->nodes[r->lb_node].name).s);
    if (p->budget == 0) {
        printf("budget       unlimited\n");
        return;
    }
    char pct[160];
    if (b && b->percent)
        rm_cli_budget_pct(pct, sizeof pct, b, p->budget, r->noremat_total);
    else
        snprintf(pct, sizeof pct, "%.1f%% of the no-remat peak", 100.0 * (double)p->budget / ref);
    printf("budget       %s (%s) = fixed + %s for activations\n", rm_cli_bytes(x, sizeof x, (double)p->budget), pct,
           rm_cli_bytes(z, sizeof z, (double)(p->budget - p->fixed_bytes)));
}

int rm_cli_each_item(const char *list, int (*fn)(void *ctx, const char *item), void *ctx)
{
    char buf[2048];
    if (strlen(list) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int rc = fn(ctx, tok);
        if (rc) return rc;
    }
    return 0;
}

typedef struct strategy_list {
    const rm_strategy_info **v;
    int *n, cap, added;
    char *why;
    size_t len;
} strategy_list;

static int add_strategy(strategy_list *l, const rm_strategy_info *st)
{
    l->added++;
    for (int k = 0; k < *l->n; k++)
        if (l->v[k] == st) return 0;
    if (*l->n >= l->cap) {
        snprintf(l->why, l->len, "--strategies: more than %d strategies", l->cap);
        return -1;
    }
    l->v[(*l->n)++] = st;
    return 0;
}

const char *rm_cli_unknown_strategy(char *buf, size_t len, const char *name, int with_all)
{
    int count, at = snprintf(buf, len, "unknown strategy '%s' (one of:", name);
    const rm_strategy_info *all = rm_strategy_list_all(&count);
    for (int k = 0; k < count && at >= 0 && (size_t)at < len; k++)
        at += snprintf(buf + at, len - (size_t)at, "%s %s", k ? "," : "", all[k].name);
    if (at >= 0 && (size_t)at < len) snprintf(buf + at, len - (size_t)at, "%s)", with_all ? ", or all" : "");
    return buf;
}

static int add_named_strategy(void *ctx, const char *name)
{
    strategy_list *l = ctx;
    if (!strcmp(name, "all")) {
        int count;
        const rm_strategy_info *all = rm_strategy_list_all(&count);
        for (int k = 0; k < count; k++)
            if (add_strategy(l, &all[k])) return -1;
        return 0;
    }
    const rm_strategy_info *st = rm_strategy_find(name);
    if (!st) {
        char what[512];
        snprintf(l->why, l->len, "--strategies: %s", rm_cli_unknown_strategy(what, sizeof what, name, 1));
        return -1;
    }
    return add_strategy(l, st);
}

int rm_cli_add_strategies(const rm_strategy_info **v, int *n, int cap, const char *list, char *why, size_t len)
{
    strategy_list l = {v, n, cap, 0, why, len};
    if (len) why[0] = '\0';
    int rc = rm_cli_each_item(list, add_named_strategy, &l);
    if (rc == -1 && l.added == 0 && *why == '\0') snprintf(why, len, "--strategies: the list is too long");
    if (rc) return -1;
    if (!l.added) {
        snprintf(why, len, "--strategies: empty list");
        return -1;
    }
    return 0;
}

int rm_cli_shown_of(rm_cli_shown *sh, const rm_problem *p, const rm_schedule *s, const rm_schedule_report *rep,
                    unsigned what, rm_err *e)
{
    memset(sh, 0, sizeof *sh);
    sh->p = p, sh->s = s, sh->rep = rep;
    if (!s->order) return RM_OK;
    for (int t = 0; t < s->n; t++) sh->moved += s->order[t] != t;
    int rc = rm_problem_reorder(&sh->own_p, p, s->order, e);
    if (!rc && !(rc = rm_schedule_copy(&sh->own_s, s, e))) rc = rm_schedule_set_order(sh->own_s, NULL, e);
    if (!rc) rc = rm_schedule_report_of(&sh->own_rep, sh->own_p, sh->own_s, NULL, what, e);
    if (rc) {
        rm_cli_shown_free(sh);
        return rc;
    }
    sh->p = sh->own_p, sh->s = sh->own_s, sh->rep = &sh->own_rep;
    return RM_OK;
}

void rm_cli_shown_free(rm_cli_shown *sh)
{
    rm_problem_free(sh->own_p);
    rm_schedule_free(sh->own_s);
    rm_schedule_report_free(&sh->own_rep);
    memset(sh, 0, sizeof *sh);
}
