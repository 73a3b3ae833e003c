/* Seeded problem generators for the scheduler tests; see random_graphs.h. */
#include "random_graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Sorts, dedups and stores deps[0..nd) into node i. */
static int set_deps(rm_problem *p, int i, int *deps, int nd)
{
    qsort(deps, (size_t)nd, sizeof *deps, cmp_int);
    int m = 0;
    for (int k = 0; k < nd; k++)
        if (m == 0 || deps[m - 1] != deps[k]) deps[m++] = deps[k];
    rm_err e = {0};
    return rm_problem_set_deps(p, i, deps, m, &e);
}

rm_problem *rg_problem_make(int n, const size_t *bytes, const double *cost, const char *const *deps)
{
    rm_problem *p;
    rm_err e = {0};
    if (rm_problem_create(&p, n, &e)) return NULL;
    int *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    for (int i = 0; i < n; i++) {
        snprintf(p->nodes[i].name, sizeof p->nodes[i].name, "n%d", i);
        p->nodes[i].bytes = bytes[i];
        p->nodes[i].cost = cost ? cost[i] : 1.0;
        p->nodes[i].tag = RM_TAG_FORWARD;
        int nd = 0;
        for (const char *s = deps[i]; *s;) {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s || nd >= n) goto fail;
            buf[nd++] = (int)v;
            s = *end == ',' ? end + 1 : end;
        }
        if (set_deps(p, i, buf, nd)) goto fail;
    }
    free(buf);
    if (rm_problem_validate(p, &e)) {
        rm_problem_free(p);
        return NULL;
    }
    return p;
fail:
    free(buf);
    rm_problem_free(p);
    return NULL;
}

static size_t rand_bytes(rm_rng *r, size_t max_bytes)
{
    size_t units = max_bytes / 16 ? max_bytes / 16 : 1;
    return 16 * (1 + (size_t)(rm_rng_next(r) % units));
}

rm_problem *rg_training_problem(uint64_t seed, const rg_options *opt)
{
    int F = opt->forward < 2 ? 2 : opt->forward;
    rm_rng r = rm_rng_make(seed * 0x9e3779b97f4a7c15ULL + 12345);
    /* Forward structure first: fdeps[i] (up to 3 deps per layer). */
    int(*fdeps)[3] = calloc((size_t)F, sizeof *fdeps);
    int *nfd = calloc((size_t)F, sizeof *nfd);
    int *nconsumers = calloc((size_t)F + 1, sizeof *nconsumers);
    for (int i = 1; i < F; i++) {
        int primary = i - 1;
        if (i >= 2 && rm_rng_uniform(&r) < opt->branch_prob) primary = i - 2;
        fdeps[i][nfd[i]++] = primary;
        if (i >= 2 && rm_rng_uniform(&r) < opt->skip_prob) {
            int lo = opt->max_skip > 0 && i - opt->max_skip > 0 ? i - opt->max_skip : 0;
            int j = lo + (int)(rm_rng_next(&r) % (uint64_t)(i - lo));
            if (j != primary) fdeps[i][nfd[i]++] = j;
        }
    }
    /* Every value but the last forward one must be read by a later layer. */
    for (int i = 1; i < F; i++)
        for (int k = 0; k < nfd[i]; k++) nconsumers[fdeps[i][k]]++;
    for (int v = 0; v + 1 < F; v++)
        if (nconsumers[v] == 0) {
            fdeps[v + 1][nfd[v + 1]++] = v;
            nconsumers[v]++;
        }
    nconsumers[F - 1] = 1; /* the loss */

    int grad_sums = 0;
    for (int v = 1; v < F; v++) grad_sums += nconsumers[v] > 1;
    int L = F, n = F + 1 + (F - 1) + 1 + grad_sums; /* forward, loss, layer backwards, loss backward, sums */
    rm_problem *p;
    rm_err e = {0};
    if (rm_problem_create(&p, n, &e)) return NULL;
    p->fixed_bytes = rand_bytes(&r, opt->max_bytes);
    int buf[64];
    for (int i = 0; i < F; i++) {
        rm_problem_node *nd = &p->nodes[i];
        snprintf(nd->name, sizeof nd->name, i == 0 ? "input" : "f%d", i);
        nd->tag = RM_TAG_FORWARD;
        nd->bytes = rand_bytes(&r, opt->max_bytes);
        nd->cost = i == 0 ? 0.0 : (double)(1 + rm_rng_next(&r) % 10);
        memcpy(buf, fdeps[i], sizeof fdeps[i]);
        set_deps(p, i, buf, nfd[i]);
    }
    snprintf(p->nodes[L].name, RM_NAME_LEN, "loss");
    p->nodes[L].tag = RM_TAG_LOSS;
    p->nodes[L].bytes = 16;
    p->nodes[L].cost = 1;
    buf[0] = F - 1;
    set_deps(p, L, buf, 1);

    /* Backward: the loss layer, then layers F-1..1. bnode[c] is layer c's
     * backward node (c == F: the loss); gsrc[v] where the gradient of v is. */
    int *bnode = calloc((size_t)F + 1, sizeof *bnode);
    int next = L + 1;
    for (int c = F; c >= 1; c--) {
        int nb = 0;
        int reads_in = c == F || rm_rng_uniform(&r) < 0.7;
        int reads_out = c != F && rm_rng_uniform(&r) < 0.3;
        if (c < F) {
            /* The gradient of c's output: one consumer's backward, or a sum. */
            int cons[256], ncons = 0;
            for (int u = c + 1; u <= F; u++) {
                const rm_problem_node *un = &p->nodes[u];
                for (int k = 0; k < un->ndeps; k++)
                    if (un->deps[k] == c && ncons < 256) cons[ncons++] = bnode[u];
            }
            int g = cons[0];
            if (ncons > 1) {
                g = next++;
                rm_problem_node *sn = &p->nodes[g];
                snprintf(sn->name, sizeof sn->name, "f%d.gradsum", c);
                sn->tag = RM_TAG_BACKWARD;
                sn->bytes = p->nodes[c].bytes;
                sn->cost = (double)ncons - 1;
                set_deps(p, g, cons, ncons);
            }
            buf[nb++] = g;
        }
        const rm_problem_node *fn = &p->nodes[c];
        size_t gbytes = 0;
        for (int k = 0; k < fn->ndeps; k++) {
            if (reads_in) buf[nb++] = fn->deps[k];
            if (fn->deps[k] != 0) gbytes += p->nodes[fn->deps[k]].bytes; /* the input batch needs no gradient */
        }
        if (reads_out) buf[nb++] = c;
        int b = next++;
        bnode[c] = b;
        rm_problem_node *bn = &p->nodes[b];
        snprintf(bn->name, sizeof bn->name, c == F ? "loss.grad" : "f%d.grad", c);
        bn->tag = RM_TAG_BACKWARD;
        bn->bytes = gbytes;
        bn->cost = 2 * fn->cost;
        set_deps(p, b, buf, nb);
    }
    free(bnode);
    free(fdeps);
    free(nfd);
    free(nconsumers);
    if (next != n || rm_problem_validate(p, &e)) {
        rm_problem_free(p);
        return NULL;
    }
    return p;
}

rm_problem *rg_chain_problem(uint64_t seed, int forward, size_t max_bytes)
{
    rg_options o = {forward, 0.0, 0.0, 0, max_bytes};
    return rg_training_problem(seed, &o);
}

rm_problem *rg_checkmate_linear(int layers, uint64_t seed, size_t max_bytes)
{
    int n = 2 * layers + 1;
    rm_problem *p;
    rm_err e = {0};
    if (layers < 1 || rm_problem_create(&p, n, &e)) return NULL;
    rm_rng r = rm_rng_make(seed * 0x9e3779b97f4a7c15ULL + 777);
    for (int k = 0; k < n; k++) {
        rm_problem_node *nd = &p->nodes[k];
        nd->tag = k < layers ? RM_TAG_FORWARD : k == layers ? RM_TAG_LOSS : RM_TAG_BACKWARD;
        snprintf(nd->name, sizeof nd->name,
                 k < layers    ? "f%d"
                 : k == layers ? "loss"
                               : "b%d",
                 k < layers ? k : 2 * layers - k);
        nd->bytes = seed ? rand_bytes(&r, max_bytes) : 16;
        nd->cost = seed ? (double)(1 + rm_rng_next(&r) % 10) : 1.0;
        int deps[2], nd2 = 0;
        if (k > 0) deps[nd2++] = k - 1;
        if (k > layers) deps[nd2++] = 2 * layers - k; /* the forward value its gradient needs */
        if (set_deps(p, k, deps, nd2)) {
            rm_problem_free(p);
            return NULL;
        }
    }
    if (rm_problem_validate(p, &e)) {
        rm_problem_free(p);
        return NULL;
    }
    return p;
}

int rg_loss_index(const rm_problem *p)
{
    for (int i = 0; i < p->n; i++)
        if (p->nodes[i].tag == RM_TAG_LOSS) return i;
    return -1;
}

/* The node of a layer of width w nearest to relative position x (0..1). */
static int nearest(double x, int w)
{
    int k = (int)(x * w);
    return k < 0 ? 0 : k >= w ? w - 1 : k;
}

rm_problem *rg_layered_problem(uint64_t seed, int layers, int width, double density, double skip, int band)
{
    if (layers < 1 || width < 1 || band < 0) return NULL;
    rm_rng r = rm_rng_make(seed * 0x9e3779b97f4a7c15ULL + 777);
    int *w = malloc((size_t)layers * sizeof *w), *at = malloc(((size_t)layers + 1) * sizeof *at);
    if (!w || !at) {
        free(w);
        free(at);
        return NULL;
    }
    /* Banded: widths within 75% of width either way (Moccasin's "node level
     * variance" 0.75). */
    at[0] = 0;
    for (int l = 0; l < layers; l++) {
        int spread = band ? (int)(0.75 * width) : 0;
        w[l] = width - spread + (spread ? (int)(rm_rng_next(&r) % (uint64_t)(2 * spread + 1)) : 0);
        if (w[l] < 1) w[l] = 1;
        at[l + 1] = at[l] + w[l];
    }
    int n = at[layers], maxw = 0;
    for (int l = 0; l < layers; l++) maxw = w[l] > maxw ? w[l] : maxw;
    rm_problem *p = NULL;
    rm_err e = {0};
    int *buf = malloc(((size_t)maxw + 2) * sizeof *buf), *nreaders = calloc((size_t)n, sizeof *nreaders);
    if (!buf || !nreaders || rm_problem_create(&p, n, &e)) goto fail;
    /* Layer by layer: deps on the layer before (and a skip), then any node
     * of the layer before that nobody reads is given a reader here. */
    for (int l = 0; l < layers; l++) {
        for (int j = 0; j < w[l]; j++) {
            int i = at[l] + j, nd = 0;
            double x = (j + 0.5) / w[l]; /* its relative position in its layer */
            rm_problem_node *node = &p->nodes[i];
            snprintf(node->name, sizeof node->name, "l%d.%d", l, j);
            node->tag = RM_TAG_FORWARD;
            node->cost = (double)(1 + rm_rng_next(&r) % (band ? 1000 : 100));
            node->bytes = 1024 * (1 + (size_t)(rm_rng_next(&r) % (band ? 48 : 32)));
            if (l == 0) continue;
            int c = nearest(x, w[l - 1]), lo = band ? c - band : 0, hi = band ? c + band : w[l - 1] - 1;
            for (int k = lo < 0 ? 0 : lo; k <= hi && k < w[l - 1]; k++)
                if (k == c && band ? 1 : rm_rng_uniform(&r) < density) buf[nd++] = at[l - 1] + k;
            if (nd == 0) buf[nd++] = at[l - 1] + (int)(rm_rng_next(&r) % (uint64_t)w[l - 1]);
            if (l >= 2 && rm_rng_uniform(&r) < skip) {
                int ls = (int)(rm_rng_next(&r) % (uint64_t)(l - 1));
                int k = band ? nearest(x, w[ls]) : (int)(rm_rng_next(&r) % (uint64_t)w[ls]);
                buf[nd++] = at[ls] + k;
            }
            for (int k = 0; k < nd; k++) nreaders[buf[k]]++;
            if (set_deps(p, i, buf, nd)) goto fail;
        }
        if (l == 0) continue;
        for (int k = 0; k < w[l - 1]; k++) {
            int v = at[l - 1] + k;
            if (nreaders[v]) continue;
            int j = band ? nearest((k + 0.5) / w[l - 1], w[l]) : (int)(rm_rng_next(&r) % (uint64_t)w[l]);
            rm_problem_node *node = &p->nodes[at[l] + j];
            int m = 0;
            int *tmp = malloc(((size_t)node->ndeps + 1) * sizeof *tmp);
            if (!tmp) goto fail;
            for (int d = 0; d < node->ndeps; d++) tmp[m++] = node->deps[d];
            tmp[m++] = v;
            nreaders[v]++;
            int rc = set_deps(p, at[l] + j, tmp, m);
            free(tmp);
            if (rc) goto fail;
        }
    }
    free(w);
    free(at);
    free(buf);
    free(nreaders);
    if (rm_problem_validate(p, &e)) {
        rm_problem_free(p);
        return NULL;
    }
    return p;
fail:
    free(w);
    free(at);
    free(buf);
    free(nreaders);
    rm_problem_free(p);
    return NULL;
}
