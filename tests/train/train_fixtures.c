/* Test fixtures for the train/ suites (see train_fixtures.h). */
#include "train_fixtures.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"
#include "rng.h"

void tf_model_text(char *out, size_t len, const char *conv_name, int conv_filters, int classes)
{
    snprintf(out, len,
             "[net]\nchannels=3\nheight=8\nwidth=8\n"
             "[conv]\nname=%s\nfilters=%d\nsize=3\npad=1\n"
             "[batchnorm]\nname=bn1\n"
             "[relu]\nname=relu1\n"
             "[linear]\nname=fc\nout=%d\n"
             "[softmax_xent]\nname=loss\n",
             conv_name, conv_filters, classes);
}

void tf_net_fill(tf_net *n, uint64_t seed)
{
    rm_rng r = rm_rng_make(seed);
    for (size_t i = 0; i < n->m->param_count; i++) n->params[i] = (float)rm_rng_range(&r, -1.0, 1.0);
    for (size_t i = 0; i < n->m->param_count; i++) n->grads[i] = (float)rm_rng_range(&r, -1.0, 1.0);
    for (size_t i = 0; i < n->m->buffer_count; i++) n->buffers[i] = (float)rm_rng_range(&r, 0.1, 2.0);
}

tf_net tf_net_make(const char *text, uint64_t seed)
{
    tf_net n;
    memset(&n, 0, sizeof n);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_parse(&n.m, text, "test.cfg", &e), RM_OK, "%s", e.msg);
    const rm_model *m = n.m;
    n.params = calloc(m->param_count + 1, sizeof(float));
    n.grads = calloc(m->param_count + 1, sizeof(float));
    n.buffers = calloc(m->buffer_count + 1, sizeof(float));
    n.lp = calloc((size_t)m->nlayers, sizeof *n.lp);
    n.lpp = calloc((size_t)m->nlayers, sizeof *n.lpp);
    cr_assert(n.params && n.grads && n.buffers && n.lp && n.lpp);
    size_t pc = 0, bc = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const rm_model_layer *ly = &m->layers[i];
        rm_layer_params *p = &n.lp[i];
        if (ly->desc->param_shapes) {
            rm_shape w = {0, 0, 0, 0}, b = {0, 0, 0, 0};
            ly->desc->param_shapes(&w, &b, &ly->cfg, ly->in_shape, ly->nin);
            size_t nw = rm_shape_numel(w), nb = rm_shape_numel(b);
            if (nw) {
                p->w = rm_tensor_make(w, n.params + pc);
                p->dw = rm_tensor_make(w, n.grads + pc);
            }
            if (nb) {
                p->b = rm_tensor_make(b, n.params + pc + nw);
                p->db = rm_tensor_make(b, n.grads + pc + nw);
            }
            pc += nw + nb;
        }
        if (ly->buffer_count) {
            size_t c = ly->buffer_count / 2;
            rm_shape s = rm_shape_make((int)c, 1, 1, 1);
            p->running_mean = rm_tensor_make(s, n.buffers + bc);
            p->running_var = rm_tensor_make(s, n.buffers + bc + c);
            bc += 2 * c;
        }
        n.lpp[i] = (p->w.data || p->b.data || p->running_mean.data) ? p : NULL;
    }
    cr_assert_eq(pc, m->param_count);
    cr_assert_eq(bc, m->buffer_count);
    tf_net_fill(&n, seed);
    return n;
}

void tf_net_free(tf_net *n)
{
    rm_model_free(n->m);
    free(n->params);
    free(n->grads);
    free(n->buffers);
    free(n->lp);
    free(n->lpp);
    memset(n, 0, sizeof *n);
}

void tf_tmpdir(char *out, size_t len)
{
    snprintf(out, len, "/tmp/remat_train_test_XXXXXX");
    cr_assert_not_null(mkdtemp(out), "mkdtemp failed");
}

void tf_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char path[1024];
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) != 0) tf_rmdir(path); /* a directory a test made */
    }
    closedir(d);
    rmdir(dir);
}
