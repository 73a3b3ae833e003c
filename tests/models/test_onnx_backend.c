/* ONNX's own backend test data (Debian's libonnx-testdata: each test a
 * model.onnx with input_*.pb and output_*.pb tensors) through remat: every
 * test whose model remat imports is run through remat's forward pass (the
 * executor on the CPU reference backend, in inference mode) and compared
 * with ONNX's expected outputs, and every one of them must match. The
 * others are counted as unsupported with the importer's reason; the counts
 * (supported / passed / total) are printed, and supported has a floor, so
 * that an importer that refused everything could not pass.
 *
 * A node test passes a layer's weights as graph inputs (input_1.pb, ...):
 * they are bound to the importer as constants (rm_onnx_options.bind), and
 * input_0.pb is the batch. The loss is chosen to fit the output
 * (RM_ONNX_LOSS_AUTO); an output of one channel takes no loss (softmax over
 * one class), so those tests count as unsupported.
 *
 * Tolerance: |remat - ONNX| <= 1e-5 + 1e-4 |ONNX| per element. remat's CPU
 * kernels sum in double and round once; the expected outputs were computed
 * in float32 by numpy or PyTorch, whose sums round at every step, in
 * another order. For the sums here (at most a few thousand products of
 * values near 1) float32's accumulated error stays below 1e-5 relative, so
 * 1e-4 relative is tight enough to catch a wrong weight, padding or index
 * (errors of order 1) and loose enough for summation order; the absolute
 * 1e-5 covers outputs near zero, where a relative bound means nothing.
 * (ONNX's own runner uses rtol 1e-3, atol 1e-7.)
 *
 * REMAT_ONNX_TESTDATA names another data folder; REMAT_ONNX_VERBOSE=1
 * prints every test's verdict. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "infer.h"
#include "onnx.h"
#include "onnx_check.h"

#define RTOL 1e-4
#define ATOL 1e-5
#define MAX_TENSORS 16
/* Supported tests as of Debian bookworm's libonnx-testdata 1.12.0: fewer
 * means the importer lost an operator. */
#define MIN_SUPPORTED 54

static const char *const suites[] = {"node", "pytorch-converted", "pytorch-operator", "simple", "real"};

typedef struct tally {
    int total, supported, passed;
    char failures[4096];
    size_t used;
} tally;

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of a folder starting with prefix, sorted; *n of them. */
static char **list_dir(const char *dir, const char *prefix, int *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **v = NULL;
    int cap = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, prefix, strlen(prefix))) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            v = realloc(v, (size_t)cap * sizeof *v);
            cr_assert(v);
        }
        v[(*n)++] = strdup(de->d_name);
    }
    closedir(d);
    if (*n) qsort(v, (size_t)*n, sizeof *v, cmp_names);
    return v;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void fail_note(tally *t, const char *test, const char *why)
{
    if (t->used < sizeof t->failures)
        t->used += (size_t)snprintf(t->failures + t->used, sizeof t->failures - t->used, "\n  %s: %s", test, why);
}

/* The tensors name_0.pb, name_1.pb, ... of a data set; returns how many. */
static int load_tensors(rm_onnx_tensor *t, const char *set, const char *name, char *why, size_t len)
{
    int k = 0;
    for (; k < MAX_TENSORS; k++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s_%d.pb", set, name, k);
        struct stat st;
        if (stat(p, &st)) break;
        rm_err e = {RM_OK, ""};
        if (rm_onnx_tensor_load(&t[k], p, &e)) {
            snprintf(why, len, "%s", e.msg);
            for (int q = 0; q < k; q++) rm_onnx_tensor_free(&t[q]);
            return -1;
        }
    }
    return k;
}

/* Runs one data set of a supported test; "" in why when it passes. */
static void run_set(const char *model_path, const char *set, char *why, size_t len, int *supported)
{
    rm_onnx_tensor in[MAX_TENSORS], out[MAX_TENSORS];
    int nin = load_tensors(in, set, "input", why, len), nout = 0;
    if (nin < 0) {
        *supported = 0;
        return;
    }
    if (nin > 0) nout = load_tensors(out, set, "output", why, len);
    if (nin < 1 || nout != 1) {
        /* remat's network has one input batch and one output. */
        if (nin >= 0 && nout >= 0) snprintf(why, len, "%d inputs and %d outputs in the data", nin, nout);
        *supported = 0;
        for (int k = 0; k < nin; k++) rm_onnx_tensor_free(&in[k]);
        for (int k = 0; k < nout; k++) rm_onnx_tensor_free(&out[k]);
        return;
    }
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = RM_ONNX_LOSS_AUTO;
    o.bind = in + 1;
    o.nbind = nin - 1;
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    *supported = 0;
    why[0] = '\0';
    if (rm_onnx_load(&m, NULL, model_path, &o, &e)) {
        snprintf(why, len, "%s", e.msg);
    } else {
        *supported = 1;
        const rm_onnx_tensor *x = &in[0], *y = &out[0];
        size_t per_in = rm_shape_numel(m->input), per_out = rm_model_output_numel(m);
        long batch = x->rank ? (long)x->dims[0] : 0;
        if (!x->data || !y->data)
            snprintf(why, len, "the data's input or output holds integers");
        else if (batch < 1 || x->count != (size_t)batch * per_in)
            snprintf(why, len, "input of %zu values for batch %ld of %zu", x->count, batch, per_in);
        else if (y->rank < 1 || y->dims[0] != batch || y->count != (size_t)batch * per_out)
            snprintf(why, len, "expected output of %zu values, remat computes %ld x %zu", y->count, batch, per_out);
        else {
            float *got = malloc(y->count * sizeof *got);
            cr_assert(got);
            if (rm_model_infer(got, m, x->data, (int)batch, 1, &e)) {
                snprintf(why, len, "forward: %s", e.msg);
            } else {
                long bad = onnx_compare(got, y->data, y->count, RTOL, ATOL);
                if (bad >= 0)
                    snprintf(why, len, "output %ld is %.9g, ONNX says %.9g (of %zu)", bad, (double)got[bad],
                             (double)y->data[bad], y->count);
            }
            free(got);
        }
        rm_model_free(m);
    }
    for (int k = 0; k < nin; k++) rm_onnx_tensor_free(&in[k]);
    rm_onnx_tensor_free(&out[0]);
}

/* Tests whose expected output is one draw of a random mask: a Dropout with
 * training_mode true, run by ONNX's reference with its own generator.
 * remat imports the node (its dropout drops in training, with its own masks,
 * and passes everything in inference), so nothing here can match the draw. */
static int random_by_design(const char *dir)
{
    static const char *const tests[] = {"/test_training_dropout", "/test_training_dropout_default"};
    size_t n = strlen(dir);
    for (size_t k = 0; k < sizeof tests / sizeof *tests; k++) {
        size_t m = strlen(tests[k]);
        if (n >= m && !strcmp(dir + n - m, tests[k])) return 1;
    }
    return 0;
}

static void run_test(tally *t, const char *dir, const char *label, int verbose)
{
    char model[1024], why[RM_ERR_MSG_LEN + 128] = "";
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    t->total++;
    struct stat st;
    int supported = 0, ok = 1;
    if (random_by_design(dir)) {
        snprintf(why, sizeof why, "its expected output is one draw of ONNX's dropout mask in training mode");
    } else if (stat(model, &st)) {
        snprintf(why, sizeof why, "no model.onnx (a model to download)");
    } else {
        int nsets;
        char **sets = list_dir(dir, "test_data_set_", &nsets);
        if (!nsets) snprintf(why, sizeof why, "no test data set");
        for (int s = 0; s < nsets; s++) {
            char set[1024];
            snprintf(set, sizeof set, "%s/%s", dir, sets[s]);
            int sup;
            run_set(model, set, why, sizeof why, &sup);
            if (s == 0) supported = sup;
            if (sup && why[0]) ok = 0;
            if (!sup || !ok) break;
        }
        free_list(sets, nsets);
    }
    if (supported) {
        t->supported++;
        if (ok)
            t->passed++;
        else
            fail_note(t, label, why);
    }
    if (verbose)
        fprintf(stderr, "onnx-backend %-60s %s%s%s\n", label,
                !supported ? "unsupported: "
                : ok       ? "passed"
                           : "FAILED: ",
                supported && ok ? "" : why, "");
}

Test(onnx_backend, every_supported_test_matches_onnx, .timeout = 600)
{
    const char *root = getenv("REMAT_ONNX_TESTDATA");
    if (!root) root = "/usr/share/libonnx-testdata/data";
    cr_assert(is_dir(root), "%s: no ONNX backend test data (Debian's libonnx-testdata; ./scripts/setup installs it)",
              root);
    const char *v = getenv("REMAT_ONNX_VERBOSE");
    int verbose = v && *v == '1';
    tally all;
    memset(&all, 0, sizeof all);
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", root, suites[s]);
        int n;
        char **tests = list_dir(dir, "test_", &n);
        tally one;
        memset(&one, 0, sizeof one);
        for (int i = 0; i < n; i++) {
            char path[1024], label[256];
            snprintf(path, sizeof path, "%s/%s", dir, tests[i]);
            snprintf(label, sizeof label, "%s/%s", suites[s], tests[i]);
            if (is_dir(path)) run_test(&one, path, label, verbose);
        }
        free_list(tests, n);
        fprintf(stderr, "onnx backend tests, %-18s %3d supported, %3d passed, %4d total\n", suites[s], one.supported,
                one.passed, one.total);
        all.total += one.total, all.supported += one.supported, all.passed += one.passed;
        if (all.used < sizeof all.failures)
            all.used += (size_t)snprintf(all.failures + all.used, sizeof all.failures - all.used, "%s", one.failures);
    }
    fprintf(stderr, "onnx backend tests, all: %d supported, %d passed, %d total (tolerance rtol %g, atol %g)\n",
            all.supported, all.passed, all.total, RTOL, ATOL);
    cr_expect_eq(all.passed, all.supported, "%d of %d supported tests fail:%s", all.supported - all.passed,
                 all.supported, all.failures);
    cr_expect_geq(all.supported, MIN_SUPPORTED, "only %d tests supported (at least %d were)", all.supported,
                  MIN_SUPPORTED);
}
