/* Names of the backends' kernel libraries (backend_cuda.h: handwritten,
 * cublas, cudnn; backend_cpu.h: reference, fast) and the CPU thread count,
 * parsed by one helper and shared by every build, so the CLI, the
 * benchmarks and the tests parse them either way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "backend_cuda.h"

static const char *const lib_names[RM_KERNELS_COUNT] = {"handwritten", "cublas", "cudnn"};
static const char *const cpu_lib_names[RM_CPU_KERNELS_COUNT] = {"reference", "fast"};

/* The index of name among names[0..count), or RM_ERR_INVALID naming what
 * was asked for and the choices ("a, b or c"). */
static int name_parse(int *out, const char *name, const char *const *names, int count, const char *what, rm_err *e)
{
    for (int i = 0; i < count; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = i;
            return RM_OK;
        }
    char choices[128] = "";
    for (int i = 0; i < count; i++) {
        strncat(choices, names[i], sizeof choices - strlen(choices) - 1);
        strncat(choices, i + 2 < count ? ", " : i + 2 == count ? " or " : "", sizeof choices - strlen(choices) - 1);
    }
    return rm_errorf(e, RM_ERR_INVALID, "unknown %s '%s' (%s)", what, name ? name : "(null)", choices);
}

static const char *name_at(const char *const *names, int count, int i)
{
    return i >= 0 && i < count ? names[i] : "unknown";
}

/* ---- the CUDA backend's libraries ---- */

const char *rm_kernel_lib_name(rm_kernel_lib lib)
{
    return name_at(lib_names, RM_KERNELS_COUNT, (int)lib);
}

int rm_kernel_lib_parse(rm_kernel_lib *out, const char *name, rm_err *e)
{
    int i = 0, rc = name_parse(&i, name, lib_names, RM_KERNELS_COUNT, "kernel library", e);
    return rc ? rc : (*out = (rm_kernel_lib)i, RM_OK);
}

/* ---- the CPU backend's libraries and threads ---- */

const char *rm_cpu_kernels_name(rm_cpu_kernels lib)
{
    return name_at(cpu_lib_names, RM_CPU_KERNELS_COUNT, (int)lib);
}

int rm_cpu_kernels_parse(rm_cpu_kernels *out, const char *name, rm_err *e)
{
    int i = 0, rc = name_parse(&i, name, cpu_lib_names, RM_CPU_KERNELS_COUNT, "cpu kernel library", e);
    return rc ? rc : (*out = (rm_cpu_kernels)i, RM_OK);
}

int rm_cpu_threads_parse(int *out, const char *text, rm_err *e)
{
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || errno || v < 1 || v > RM_CPU_MAX_THREADS)
        return rm_errorf(e, RM_ERR_INVALID, "threads must be an integer from 1 to %d, got '%s'", RM_CPU_MAX_THREADS,
                         text ? text : "(null)");
    *out = (int)v;
    return RM_OK;
}
