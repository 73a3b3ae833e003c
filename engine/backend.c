/* The backend registry: every backend's entry by id and by name, creation,
 * freeing, and the generic helpers over the ops (settings, device
 * questions, the workspace bound of a kind before any backend of it exists).
 * The only place besides the backends themselves that names a backend: a
 * new backend adds its id (backend.h) and its entry here, and everything
 * else it needs lives in its own folder. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* Defined in each backend's folder (engine/cpu/cpu_info.c,
 * engine/cuda/cuda_info.c), in every build. */
extern const rm_backend_info rm_backend_cpu_info, rm_backend_cuda_info;

static const rm_backend_info *const registry[RM_BACKEND_KIND_COUNT] = {
    [RM_BACKEND_CPU] = &rm_backend_cpu_info,
    [RM_BACKEND_CUDA] = &rm_backend_cuda_info,
};

const rm_backend_info *rm_backend_info_of(rm_backend_kind kind)
{
    return (int)kind >= 0 && kind < RM_BACKEND_KIND_COUNT ? registry[kind] : NULL;
}

/* names[0..count) as "a, b or c" in buf. */
static const char *join_names(char *buf, size_t len, const char *const *names, int count)
{
    buf[0] = 0;
    for (int i = 0; i < count; i++) {
        strncat(buf, names[i], len - strlen(buf) - 1);
        strncat(buf, i + 2 < count ? ", " : i + 2 == count ? " or " : "", len - strlen(buf) - 1);
    }
    return buf;
}

int rm_backend_name_parse(int *out, const char *name, const char *const *names, int count, const char *what, rm_err *e)
{
    for (int i = 0; i < count; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = i;
            return RM_OK;
        }
    char choices[128];
    return rm_errorf(e, RM_ERR_INVALID, "unknown %s '%s' (%s)", what, name ? name : "(null)",
                     join_names(choices, sizeof choices, names, count));
}

/* The backends' names by id. */
static void backend_names(const char *names[RM_BACKEND_KIND_COUNT])
{
    for (int k = 0; k < RM_BACKEND_KIND_COUNT; k++) names[k] = registry[k]->name;
}

int rm_backend_find(rm_backend_kind *out, const char *name, rm_err *e)
{
    const char *names[RM_BACKEND_KIND_COUNT];
    backend_names(names);
    int k = 0, rc = rm_backend_name_parse(&k, name, names, RM_BACKEND_KIND_COUNT, "device", e);
    if (!rc) *out = (rm_backend_kind)k;
    return rc;
}

const char *rm_backend_list(char *buf, size_t len)
{
    const char *names[RM_BACKEND_KIND_COUNT];
    backend_names(names);
    return join_names(buf, len, names, RM_BACKEND_KIND_COUNT);
}

int rm_backend_kernels_parse(int *lib, rm_backend_kind kind, const char *name, rm_err *e)
{
    const rm_backend_info *b = rm_backend_info_of(kind);
    if (!b) return rm_errorf(e, RM_ERR_INVALID, "kernel library of unknown device %d", (int)kind);
    char what[64];
    snprintf(what, sizeof what, "%s kernel library", b->name);
    return rm_backend_name_parse(lib, name, b->kernel_libs, b->nkernel_libs, what, e);
}

const char *rm_backend_kernels_name(rm_backend_kind kind, int lib)
{
    const rm_backend_info *b = rm_backend_info_of(kind);
    return b && lib >= 0 && lib < b->nkernel_libs ? b->kernel_libs[lib] : "unknown";
}

int rm_backend_threads_parse(int *out, const char *text, rm_err *e)
{
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || errno || v < 1 || v > RM_MAX_THREADS)
        return rm_errorf(e, RM_ERR_INVALID, "threads must be an integer from 1 to %d, got '%s'", RM_MAX_THREADS,
                         text ? text : "(null)");
    *out = (int)v;
    return RM_OK;
}

int rm_backend_create_with(rm_backend **out, rm_backend_kind kind, const rm_backend_options *o, rm_err *e)
{
    *out = NULL;
    const rm_backend_info *b = rm_backend_info_of(kind);
    if (!b) return rm_errorf(e, RM_ERR_INVALID, "unknown device %d (cpu or cuda)", (int)kind);
    if (o && o->threads && !b->has_threads)
        return rm_errorf(e, RM_ERR_INVALID, "a thread count is a setting of a backend with host threads, not of %s",
                         b->name);
    return b->create(out, o, e);
}

int rm_backend_create(rm_backend **out, rm_backend_kind kind, rm_err *e)
{
    return rm_backend_create_with(out, kind, NULL, e);
}

const char *rm_backend_kind_name(rm_backend_kind kind)
{
    const rm_backend_info *b = rm_backend_info_of(kind);
    return b ? b->name : "unknown";
}

const char *rm_backend_kind_device(rm_backend_kind kind)
{
    const rm_backend_info *b = rm_backend_info_of(kind);
    return b ? b->device : "an unknown device";
}

void rm_backend_free(rm_backend *be)
{
    if (!be || be == rm_backend_host()) return;
    be->ops->destroy(be->ctx);
    free(be);
}

int rm_backend_apply(rm_backend *be, const rm_backend_options *o, rm_err *e)
{
    if (o->threads && !be->ops->set_threads)
        return rm_errorf(e, RM_ERR_INVALID, "a thread count is a setting of a backend with host threads, not of %s",
                         be->name);
    int rc = o->set_kernels ? be->ops->set_kernels(be->ctx, o->kernels, e) : RM_OK;
    if (!rc && o->threads) rc = be->ops->set_threads(be->ctx, o->threads, e);
    return rc;
}

const char *rm_backend_describe(const rm_backend *be, char *buf, size_t len)
{
    be->ops->describe(be->ctx, buf, len);
    return buf;
}

size_t rm_backend_fixed_bytes(const rm_backend *be)
{
    return be && be->ops->fixed_bytes ? be->ops->fixed_bytes(be->ctx) : 0;
}

int rm_backend_kernels(const rm_backend *be)
{
    return be->ops->kernels(be->ctx);
}

size_t rm_backend_kind_layer_workspace(rm_backend_kind kind, const struct rm_layer_desc *d,
                                       const struct rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                       int backward)
{
    const rm_backend_info *b = rm_backend_info_of(kind);
    return b ? b->layer_workspace_bound(d, cfg, in, nin, out, backward) : 0;
}
