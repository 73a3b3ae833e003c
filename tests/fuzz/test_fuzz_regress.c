/* The fuzzers' corpora and every crash they found, replayed through the
 * harnesses in the normal suites (and so under ASan/UBSan with gcc in
 * scripts/test): a fixed bug cannot come back, and the seed corpora keep
 * loading. Seeds named ok-* must be accepted and bad-* refused, so the
 * corpora also pin what the parsers accept; other names (files the fuzzer
 * found, crash reproducers) only have to run cleanly. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_fixture.h"
#include "faults/inject.h"
#include "harnesses.h"
#include "onnx.h"
#include "onnx_wire.h"

/* Reproducers of bugs not fixed yet are listed in tests/fuzz/known-open.txt
 * as "<harness>/<file>" (with the reason in a comment): they are skipped,
 * with a note on stderr, here and in scripts/fuzz --smoke, so the suites stay green
 * until the bug is fixed and the line removed. */
static int is_open_bug(const char *harness, const char *name)
{
    char key[512], line[1024];
    snprintf(key, sizeof key, "%s/%s", harness, name);
    FILE *fp = fopen(REMAT_SOURCE_DIR "/tests/fuzz/known-open.txt", "r");
    if (!fp) return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, fp)) {
        line[strcspn(line, " \t\r\n#")] = '\0';
        found = !strcmp(line, key);
    }
    fclose(fp);
    return found;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* No input may make one allocation this large: scripts/fuzz's
 * -malloc_limit_mb=512 (libFuzzer stops at 512 MiB or more), which turned
 * such inputs into the oom-* findings; no parser needs 512 MiB for a file
 * of a few KiB. Only allocations from code linked into the test binary are
 * seen (the --wrap of tests/faults): protobuf-c's own, in its shared
 * library, are not. */
#define MALLOC_LIMIT ((size_t)512 << 20)

/* Runs every regular file of REMAT_SOURCE_DIR/tests/fuzz/<sub>/<harness>;
 * returns how many ran. */
static int replay(const rm_fuzz_harness *h, const char *sub)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", REMAT_SOURCE_DIR, sub, h->name);
    DIR *d = opendir(dir);
    if (!d) return 0; /* no crashes found for this harness */
    char **names = NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        names = realloc(names, (size_t)(n + 1) * sizeof *names);
        cr_assert_not_null(names);
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int ran = 0;
    for (int i = 0; i < n; i++) {
        if (is_open_bug(h->name, names[i])) {
            /* stderr, not cr_log_warn: Criterion's runner leaks the message of a
             * worker's log call (48 bytes, which fails the LeakSanitizer suite). */
            fprintf(stderr, "fuzz %s: skipping %s/%s, a known open bug (tests/fuzz/known-open.txt)\n", h->name, sub,
                    names[i]);
            free(names[i]);
            continue;
        }
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len;
        uint8_t *data = cf_read(path, &len);
        cr_assert_not_null(data, "cannot open %s", path);
        fi_alloc_largest_reset();
        int rc = h->run(data, len);
        size_t largest = fi_alloc_largest();
        free(data);
        cr_expect_lt(largest, MALLOC_LIMIT,
                     "%s: one allocation of %zu bytes for a %zu-byte input (a size read from it and trusted; "
                     "scripts/fuzz's libFuzzer stops at %zu)",
                     path, largest, len, (size_t)MALLOC_LIMIT);
        if (!strncmp(names[i], "ok-", 3)) cr_expect_eq(rc, 0, "%s: a valid seed was refused (rc %d)", path, rc);
        if (!strncmp(names[i], "bad-", 4)) cr_expect_neq(rc, 0, "%s: an invalid seed was accepted", path);
        free(names[i]);
        ran++;
    }
    free(names);
    rm_fuzz_clear();
    return ran;
}

static void regress(const char *name)
{
    const rm_fuzz_harness *h = NULL;
    for (int i = 0; rm_fuzz_harnesses[i].name; i++)
        if (!strcmp(rm_fuzz_harnesses[i].name, name)) h = &rm_fuzz_harnesses[i];
    cr_assert_not_null(h, "no harness %s", name);
    int seeds = replay(h, "corpus");
    cr_assert_gt(seeds, 0, "tests/fuzz/corpus/%s has no seeds", name);
    replay(h, "crashes");
}

Test(fuzz_regress, config)
{
    regress("config");
}
Test(fuzz_regress, problem)
{
    regress("problem");
}
Test(fuzz_regress, schedule)
{
    regress("schedule");
}
Test(fuzz_regress, snapshot)
{
    regress("snapshot");
}
Test(fuzz_regress, mnist)
{
    regress("mnist");
}
Test(fuzz_regress, cifar)
{
    regress("cifar");
}
Test(fuzz_regress, image)
{
    regress("image");
}
Test(fuzz_regress, costs)
{
    regress("costs");
}
Test(fuzz_regress, onnx)
{
    regress("onnx");
}

/* Every harness has a regression test above. */
Test(fuzz_regress, every_harness_listed)
{
    static const char *const listed[] = {"config", "problem", "schedule", "snapshot", "mnist",
                                         "cifar",  "image",   "costs",    "onnx"};
    int n = 0;
    for (int i = 0; rm_fuzz_harnesses[i].name; i++, n++) {
        int found = 0;
        for (size_t k = 0; k < sizeof listed / sizeof listed[0]; k++)
            found |= !strcmp(listed[k], rm_fuzz_harnesses[i].name);
        cr_expect(found, "harness %s has no regression test", rm_fuzz_harnesses[i].name);
    }
    cr_expect_eq(n, (int)(sizeof listed / sizeof listed[0]));
}

/* The ONNX mutator makes what the reader's limits are about, from the seeds
 * it starts from in the corpus: mutants nested past the depth limit, int64
 * folds that overflow or would make the batch placeholder, NaN and infinite
 * weights and attributes. Each mutant (seeds 0 to 2999 of the mutator, no
 * byte-level mutation) goes through the harness, which must not crash, and
 * through the importer, whose refusals are counted by kind. */
Test(fuzz_regress, onnx_mutator_reaches_the_limits)
{
    enum { DEEP, OVERFLOW, BATCH, NONFINITE, ACCEPTED, KINDS };
    static const char *const names[KINDS] = {"nested too deep", "int64 overflow", "-2^63 folded", "non-finite",
                                             "accepted"};
    int seen[KINDS] = {0};
    pb_buf seeds[2] = {{0}, {0}};
    onnx_w_fold_chain_model(&seeds[0]);
    const float w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0.5f, -0.5f};
    onnx_w_gemm_model(&seeds[1], w, b, 1.0f, 1.0f);
    size_t cap = 1 << 16;
    uint8_t *data = malloc(cap);
    cr_assert_not_null(data);
    char path[256];
    snprintf(path, sizeof path, "%s/mutant.onnx", rm_fuzz_dir());
    for (unsigned seed = 0; seed < 3000; seed++) {
        const pb_buf *from = &seeds[seed % 2];
        cr_assert(!from->oom && from->n <= cap);
        memcpy(data, from->p, from->n);
        size_t n = rm_fuzz_onnx_mutate(data, from->n, cap, seed, NULL);
        cr_assert_leq(n, cap);
        (void)rm_fuzz_onnx(data, n);
        FILE *fp = fopen(path, "wb");
        cr_assert_not_null(fp);
        cr_assert_eq(fwrite(data, 1, n, fp), n);
        fclose(fp);
        rm_onnx_options o;
        rm_onnx_options_default(&o);
        o.loss = RM_ONNX_LOSS_AUTO;
        rm_model *m = NULL;
        rm_err e = {RM_OK, ""};
        if (!rm_onnx_load(&m, NULL, path, &o, &e)) {
            seen[ACCEPTED]++;
            rm_model_free(m);
        } else if (strstr(e.msg, "nested more than")) {
            seen[DEEP]++;
        } else if (strstr(e.msg, "overflows int64")) {
            seen[OVERFLOW]++;
        } else if (strstr(e.msg, "which is -2^63")) {
            seen[BATCH]++;
        } else if (strstr(e.msg, "nan") || strstr(e.msg, "inf")) {
            seen[NONFINITE]++;
        }
    }
    for (int k = 0; k < KINDS; k++) cr_expect_gt(seen[k], 0, "no mutant %s", names[k]);
    if (getenv("RM_FUZZ_VERBOSE"))
        for (int k = 0; k < KINDS; k++) fprintf(stderr, "onnx mutants %s: %d\n", names[k], seen[k]);
    free(data);
    pb_free(&seeds[0]);
    pb_free(&seeds[1]);
    rm_fuzz_clear();
}
