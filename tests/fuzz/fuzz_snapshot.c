/* Fuzz harness: snapshot files (train/snapshot.c), loaded against a fixed
 * tiny model (conv + batchnorm + relu + linear + loss on 1x4x4 inputs, 125
 * parameters) so the loader's table, shape and optimizer checks are all
 * reachable from small inputs.
 *
 * Input: one mode byte, then the file. Bit 0 of the mode: recompute the
 * header and payload CRC-32s before writing the file, because otherwise
 * nearly every mutation dies at the checksum and the fuzzer never sees the
 * table parser; with bit 0 clear the checksum checks themselves are fuzzed.
 * Bits 1-2: the optimizer the load restores into (none, SGD with momentum,
 * Adam, SGD without momentum), since its state is only read for a matching
 * optimizer. A load must leave the parameters untouched when it fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "harnesses.h"
#include "optim.h"
#include "snapshot.h"

static const char net_text[] = "[net]\nchannels=1\nheight=4\nwidth=4\n"
                               "[conv]\nname=conv1\nfilters=2\nsize=3\npad=1\n"
                               "[batchnorm]\nname=bn1\n"
                               "[relu]\nname=relu1\n"
                               "[linear]\nname=fc\nout=3\n"
                               "[softmax_xent]\nname=loss\n";

struct rm_fuzz_net {
    rm_model *m;
    float *params, *grads, *buffers;
    rm_layer_params *lp;
    rm_layer_params **lpp;
};

void rm_fuzz_net_free(rm_fuzz_net *n)
{
    if (!n) return;
    rm_model_free(n->m);
    free(n->params), free(n->grads), free(n->buffers), free(n->lp), free(n->lpp);
    free(n);
}

/* The layout of tests/train/train_fixtures.c (the executor's): layer order,
 * w then b; running mean then variance. */
rm_fuzz_net *rm_fuzz_net_make(void)
{
    rm_fuzz_net *n = calloc(1, sizeof *n);
    rm_err e = {RM_OK, ""};
    if (!n || rm_model_parse(&n->m, net_text, "fuzz.cfg", &e)) {
        fprintf(stderr, "fuzz: the snapshot model: %s\n", e.msg);
        abort();
    }
    const rm_model *m = n->m;
    n->params = calloc(m->param_count + 1, sizeof(float));
    n->grads = calloc(m->param_count + 1, sizeof(float));
    n->buffers = calloc(m->buffer_count + 1, sizeof(float));
    n->lp = calloc((size_t)m->nlayers, sizeof *n->lp);
    n->lpp = calloc((size_t)m->nlayers, sizeof *n->lpp);
    if (!n->params || !n->grads || !n->buffers || !n->lp || !n->lpp) abort();
    size_t pc = 0, bc = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const rm_model_layer *ly = &m->layers[i];
        rm_layer_params *p = &n->lp[i];
        if (ly->desc->param_shapes) {
            rm_shape w = {0, 0, 0, 0}, b = {0, 0, 0, 0};
            ly->desc->param_shapes(&w, &b, &ly->cfg, ly->in_shape, ly->nin);
            size_t nw = rm_shape_numel(w), nb = rm_shape_numel(b);
            if (nw) p->w = rm_tensor_make(w, n->params + pc), p->dw = rm_tensor_make(w, n->grads + pc);
            if (nb) p->b = rm_tensor_make(b, n->params + pc + nw), p->db = rm_tensor_make(b, n->grads + pc + nw);
            pc += nw + nb;
        }
        if (ly->buffer_count) {
            size_t c = ly->buffer_count / 2;
            rm_shape s = rm_shape_make((int)c, 1, 1, 1);
            p->running_mean = rm_tensor_make(s, n->buffers + bc);
            p->running_var = rm_tensor_make(s, n->buffers + bc + c);
            bc += 2 * c;
        }
        n->lpp[i] = (p->w.data || p->b.data || p->running_mean.data) ? p : NULL;
    }
    if (pc != m->param_count || bc != m->buffer_count) abort();
    /* Distinct values, so a seed snapshot is not all zeros. */
    for (size_t i = 0; i < m->param_count; i++) n->params[i] = (float)i * 0.01f - 0.5f;
    for (size_t i = 0; i < m->buffer_count; i++) n->buffers[i] = 1.0f + (float)i;
    return n;
}

static rm_optim *make_optim(rm_fuzz_net *n, int kind)
{
    if (kind == 0) return NULL;
    rm_optim_tensor t[16];
    int count;
    rm_err e = {RM_OK, ""};
    if (rm_optim_tensors_from_model(t, &count, n->m, n->lpp, &e)) abort();
    rm_optim_options o = rm_optim_options_default(kind == 2 ? RM_OPTIM_ADAM : RM_OPTIM_SGD);
    o.momentum = kind == 1 ? 0.9 : 0;
    rm_optim *opt;
    if (rm_optim_create(&opt, t, count, &o, &e)) {
        fprintf(stderr, "fuzz: optimizer: %s\n", e.msg);
        abort();
    }
    return opt;
}

int rm_fuzz_net_save(rm_fuzz_net *n, const char *path, int kind, rm_err *e)
{
    rm_optim *opt = make_optim(n, kind);
    int rc = RM_OK;
    for (int s = 0; s < 2 && opt && !rc; s++) rc = rm_optim_step(opt, 0.01, e); /* non-zero state */
    const rm_snapshot_counters c = {12, 3, 0x5eed, 7, 24};
    if (!rc) rc = rm_snapshot_save(path, n->m, n->lpp, opt, &c, e);
    rm_optim_free(opt);
    return rc;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

int rm_fuzz_snapshot(const uint8_t *data, size_t size)
{
    if (size < 1) return RM_ERR_INVALID;
    int mode = data[0];
    size--, data++;
    uint8_t *file = malloc(size ? size : 1);
    if (!file) abort();
    if (size) memcpy(file, data, size);
    if ((mode & 1) && size >= RM_SNAPSHOT_HEADER_BYTES + 4) {
        put_le32(file + 28, rm_snapshot_crc32(0, file, 28));
        put_le32(file + size - 4, rm_snapshot_crc32(0, file + 32, size - 36));
    }
    char path[256];
    rm_fuzz_write(path, sizeof path, "run.snap", file, size);
    free(file);

    rm_fuzz_net *n = rm_fuzz_net_make();
    rm_optim *opt = make_optim(n, (mode >> 1) & 3);
    /* Copies to compare against after a refused load. */
    size_t np = n->m->param_count, nb = n->m->buffer_count;
    float *params = malloc((np + 1) * sizeof *params), *buffers = malloc((nb + 1) * sizeof *buffers);
    if (!params || !buffers) abort();
    memcpy(params, n->params, np * sizeof *params);
    memcpy(buffers, n->buffers, nb * sizeof *buffers);
    rm_snapshot_counters c;
    rm_err e = {RM_OK, ""};
    int rc = rm_snapshot_load(&c, path, n->m, n->lpp, opt, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc && (memcmp(params, n->params, np * sizeof *params) || memcmp(buffers, n->buffers, nb * sizeof *buffers))) {
        fprintf(stderr, "fuzz: a refused snapshot changed the parameters: %s\n", e.msg);
        abort();
    }
    free(params);
    free(buffers);
    rm_optim_free(opt);
    rm_fuzz_net_free(n);
    return rc;
}
