/* The CPU emulator's cuDNN (include/cudnn.h says what it emulates and
 * checks): descriptors as host structs, the convolution directions and
 * spatial batch normalization computed on the host from device memory,
 * which in the emulator is host memory. Formulas and argument checks follow
 * NVIDIA's cuDNN API reference; where it names a status for a condition,
 * that status is returned, and cudnnGetLastErrorString says which check
 * failed.
 *
 * Over ~600 lines on purpose: one emulated library (descriptors, three
 * convolution directions, batch norm) whose argument checks share helpers.
 */
#include <cudnn.h>

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

struct cudnnContext {
    cudaStream_t stream;
};
struct cudnnTensorStruct {
    bool set;
    cudnnDataType_t type;
    int n, c, h, w;
    size_t sn, sc, sh, sw; /* element strides */
};
struct cudnnFilterStruct {
    bool set;
    cudnnDataType_t type;
    cudnnTensorFormat_t format;
    int k, c, r, s;
};
struct cudnnConvolutionStruct {
    bool set;
    int ph, pw, u, v, dh, dw;
    int groups; /* 0 until cudnnSetConvolutionGroupCount: one group */
    cudnnConvolutionMode_t mode;
    cudnnDataType_t type;
    cudnnMathType_t math;
};

/* ---- errors ---- */
static thread_local std::string last_error;

__attribute__((format(printf, 3, 4))) static cudnnStatus_t fail(cudnnStatus_t st, const char *fn, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    last_error = std::string(fn) + ": " + msg;
    return st;
}

const char *cudnnGetErrorString(cudnnStatus_t status)
{
    switch (status) {
    case CUDNN_STATUS_SUCCESS:
        return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
        return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM:
        return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER:
        return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED:
        return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR:
        return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED:
        return "CUDNN_STATUS_EXECUTION_FAILED";
    }
    return "CUDNN_UNKNOWN_STATUS_FOUND";
}

/* The message of the last failed call (of this thread), then cleared. */
void cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (!message || !max_size) return;
    std::snprintf(message, max_size, "%s", last_error.c_str());
    last_error.clear();
}

/* ---- handles and descriptors ---- */
/* Live objects by address: a NULL, destroyed or wrong-kind handle is caught
 * here without reading freed memory. */
enum kind { HANDLE = 1, TENSOR, FILTER, CONV };
static std::map<const void *, kind> live;

static bool alive(const void *p, kind k)
{
    auto it = live.find(p);
    return p && it != live.end() && it->second == k;
}

template <class T> static cudnnStatus_t create(T **out, kind k, const char *fn)
{
    if (!out) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL output pointer");
    *out = new T();
    live[*out] = k;
    return CUDNN_STATUS_SUCCESS;
}

/* Destroying NULL does nothing (as documented for the descriptors). */
template <class T> static cudnnStatus_t destroy(T *p, kind k, const char *fn)
{
    if (!p) return CUDNN_STATUS_SUCCESS;
    if (!alive(p, k)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "%p is not a live object of this kind", (void *)p);
    live.erase(p);
    delete p;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    return create(handle, HANDLE, "cudnnCreate");
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy", "NULL handle");
    return destroy(handle, HANDLE, "cudnnDestroy");
}

static cudnnStatus_t check_handle(cudnnHandle_t h, const char *fn)
{
    return alive(h, HANDLE) ? CUDNN_STATUS_SUCCESS
                            : fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid (NULL or destroyed) handle");
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
{
    if (cudnnStatus_t st = check_handle(handle, "cudnnSetStream")) return st;
    handle->stream = streamId;
    return CUDNN_STATUS_SUCCESS;
}

static bool valid_type(cudnnDataType_t t)
{
    return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_HALF || t == CUDNN_DATA_INT8 ||
           t == CUDNN_DATA_INT32 || t == CUDNN_DATA_BFLOAT16;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc)
{
    return create(tensorDesc, TENSOR, "cudnnCreateTensorDescriptor");
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc)
{
    return destroy(tensorDesc, TENSOR, "cudnnDestroyTensorDescriptor");
}

/* The documented limit: 2 Giga-elements per tensor. */
static bool too_big(long long a, long long b, long long c, long long d)
{
    return a * b * c * d > (1ll << 31);
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t t, cudnnTensorFormat_t format,
                                         cudnnDataType_t dataType, int n, int c, int h, int w)
{
    const char *fn = "cudnnSetTensor4dDescriptor";
    if (!alive(t, TENSOR)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid descriptor");
    if (n < 0 || c < 0 || h < 0 || w < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "negative dimension");
    if (!valid_type(dataType)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid data type %d", (int)dataType);
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) {
        if (format == CUDNN_TENSOR_NCHW_VECT_C)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "NCHW_VECT_C is not emulated");
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid format %d", (int)format);
    }
    if (too_big(n, c, h, w)) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "more than 2^31 elements");
    t->type = dataType;
    t->n = n, t->c = c, t->h = h, t->w = w;
    if (format == CUDNN_TENSOR_NCHW)
        t->sw = 1, t->sh = (size_t)w, t->sc = (size_t)h * w, t->sn = (size_t)c * h * w;
    else
        t->sc = 1, t->sw = (size_t)c, t->sh = (size_t)w * c, t->sn = (size_t)h * w * c;
    t->set = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc)
{
    return create(filterDesc, FILTER, "cudnnCreateFilterDescriptor");
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc)
{
    return destroy(filterDesc, FILTER, "cudnnDestroyFilterDescriptor");
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t f, cudnnDataType_t dataType,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w)
{
    const char *fn = "cudnnSetFilter4dDescriptor";
    if (!alive(f, FILTER)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid descriptor");
    if (k < 0 || c < 0 || h < 0 || w < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "negative dimension");
    if (!valid_type(dataType)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid data type %d", (int)dataType);
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC && format != CUDNN_TENSOR_NCHW_VECT_C)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid format %d", (int)format);
    if (too_big(k, c, h, w)) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "more than 2^31 elements");
    f->type = dataType, f->format = format;
    f->k = k, f->c = c, f->r = h, f->s = w;
    f->set = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc)
{
    /* new T() zeroes it: math type CUDNN_DEFAULT_MATH, as cuDNN's default */
    return create(convDesc, CONV, "cudnnCreateConvolutionDescriptor");
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc)
{
    return destroy(convDesc, CONV, "cudnnDestroyConvolutionDescriptor");
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType)
{
    const char *fn = "cudnnSetConvolution2dDescriptor";
    if (!alive(d, CONV)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid descriptor");
    if (pad_h < 0 || pad_w < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "negative padding %d, %d", pad_h, pad_w);
    if (u <= 0 || v <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "stride %d, %d is not positive", u, v);
    if (dilation_h <= 0 || dilation_w <= 0)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "dilation %d, %d is not positive", dilation_h, dilation_w);
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid mode %d", (int)mode);
    if (!valid_type(computeType)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid compute type %d", (int)computeType);
    d->ph = pad_h, d->pw = pad_w, d->u = u, d->v = v, d->dh = dilation_h, d->dw = dilation_w;
    d->mode = mode, d->type = computeType;
    d->set = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groupCount)
{
    const char *fn = "cudnnSetConvolutionGroupCount";
    if (!alive(d, CONV)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid descriptor");
    if (groupCount < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "group count %d is not positive", groupCount);
    d->groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t mathType)
{
    const char *fn = "cudnnSetConvolutionMathType";
    if (!alive(d, CONV)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid descriptor");
    if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
        mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid math type %d", (int)mathType);
    d->math = mathType;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution geometry ---- */
/* One convolution: input n x (c * groups) x h x w, filter k x c x r x s,
 * output n x k x oh x ow, oh = 1 + (h + 2 ph - ((r - 1) dh + 1)) / u
 * (likewise ow). Output channel k reads the input channels of its group,
 * in_channel(g, k, c). */
struct geom {
    int n, c, h, w, k, r, s, oh, ow;
    int groups;
    int ph, pw, u, v, dh, dw;
    bool flip; /* CUDNN_CONVOLUTION: the filter is applied flipped */
};

static cudnnStatus_t check_tensor(const cudnnTensorStruct *t, const char *fn, const char *name)
{
    if (!alive(t, TENSOR) || !t->set)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "%s: invalid (NULL, destroyed or unset) tensor descriptor", name);
    return CUDNN_STATUS_SUCCESS;
}

/* The geometry of (x, f, conv) and, when y is given, its agreement with y.
 * full: also what a computation needs (data types, the filter layout).
 * Statuses as cudnnGetConvolution2dForwardOutputDim and cudnnConvolution*
 * document them: inconsistent descriptors are BAD_PARAM, an output of the
 * wrong spatial size NOT_SUPPORTED. */
static cudnnStatus_t conv_geom(geom *g, const char *fn, const cudnnTensorStruct *x, const cudnnFilterStruct *f,
                               const cudnnConvolutionStruct *d, const cudnnTensorStruct *y, bool full)
{
    if (cudnnStatus_t st = check_tensor(x, fn, "input")) return st;
    if (!alive(f, FILTER) || !f->set) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid filter descriptor");
    if (!alive(d, CONV) || !d->set) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid convolution descriptor");
    if (y)
        if (cudnnStatus_t st = check_tensor(y, fn, "output")) return st;
    int groups = d->groups > 0 ? d->groups : 1;
    if (x->c != f->c * groups)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "input has %d channels, the filter %d in each of %d groups", x->c, f->c,
                    groups);
    if (f->k % groups)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "%d output channels do not split into %d groups", f->k, groups);
    int er = (f->r - 1) * d->dh + 1, es = (f->s - 1) * d->dw + 1;
    if (er > x->h + 2 * d->ph || es > x->w + 2 * d->pw)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "filter %dx%d (dilated) is larger than the padded input %dx%d", er, es,
                    x->h + 2 * d->ph, x->w + 2 * d->pw);
    *g = geom{x->n,
              f->c,
              x->h,
              x->w,
              f->k,
              f->r,
              f->s,
              1 + (x->h + 2 * d->ph - er) / d->u,
              1 + (x->w + 2 * d->pw - es) / d->v,
              groups,
              d->ph,
              d->pw,
              d->u,
              d->v,
              d->dh,
              d->dw,
              d->mode == CUDNN_CONVOLUTION};
    if (full) {
        if (x->type != f->type || (y && y->type != x->type))
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "input, filter and output data types differ");
        if (x->type != CUDNN_DATA_FLOAT || d->type != CUDNN_DATA_FLOAT)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "the emulator has float data and float compute only");
        if (f->format != CUDNN_TENSOR_NCHW)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "the emulator has KCRS (NCHW) filters only");
    }
    if (y) {
        if (y->n != g->n || y->c != g->k)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "output is %dx%d (n x c), the convolution gives %dx%d", y->n, y->c,
                        g->n, g->k);
        if (y->h != g->oh || y->w != g->ow)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                        "output is %dx%d, cudnnGetConvolution2dForwardOutputDim gives %dx%d", y->h, y->w, g->oh, g->ow);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc, int *n, int *c, int *h,
                                                    int *w)
{
    const char *fn = "cudnnGetConvolution2dForwardOutputDim";
    geom g;
    if (cudnnStatus_t st = conv_geom(&g, fn, inputTensorDesc, filterDesc, convDesc, NULL, false)) return st;
    if (!n || !c || !h || !w) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL output pointer");
    *n = g.n, *c = g.k, *h = g.oh, *w = g.ow;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- the algorithms ---- */
/* Each direction's algorithms in the order the heuristics rank them: which
 * geometries each supports (after the API reference's tables, simplified)
 * and the workspace it needs. Workspace sizes are the emulator's own, fixed
 * functions of the shapes: what matters is that some are nonzero and that
 * the queries, the rankings and the calls agree on them. */
struct algo_row {
    int algo;
    cudnnDeterminism_t det;
    bool (*supported)(const geom &);
    size_t (*workspace)(const geom &);
};

static bool always(const geom &)
{
    return true;
}
static bool never(const geom &)
{
    return false;
} /* listed, not implemented */
static bool unit_stride(const geom &g)
{
    return g.u == 1 && g.v == 1 && g.dh == 1 && g.dw == 1;
}
static bool fft_ok(const geom &g)
{
    return unit_stride(g) && g.ph < g.r && g.pw < g.s && g.h + 2 * g.ph <= 256 && g.w + 2 * g.pw <= 256;
}
static bool fft_tiling_ok(const geom &g)
{
    return unit_stride(g) && g.ph < g.r && g.pw < g.s && g.r <= 32 && g.s <= 32;
}
static bool winograd_ok(const geom &g)
{
    return unit_stride(g) && g.r == 3 && g.s == 3;
}
static bool winograd_nonfused_ok(const geom &g)
{
    return unit_stride(g) && g.r == g.s && (g.r == 3 || g.r == 5);
}

static size_t no_ws(const geom &)
{
    return 0;
}
static size_t index_ws(const geom &g)
{
    return sizeof(int) * (size_t)g.c * g.r * g.s;
}
static size_t im2col_ws(const geom &g)
{
    return sizeof(float) * (size_t)g.c * g.r * g.s * g.oh * g.ow;
}
static size_t filter_bytes(const geom &g)
{
    return sizeof(float) * (size_t)g.k * g.c * g.r * g.s;
}
static size_t filter_ws(const geom &g)
{
    return filter_bytes(g);
} /* a rearranged copy of the filter */
static size_t planes(const geom &g)
{
    return (size_t)g.n * g.c + (size_t)g.k * g.c + (size_t)g.n * g.k;
}
static size_t fft_ws(const geom &g)
{
    return 2 * sizeof(float) * planes(g) * (size_t)(g.h + 2 * g.ph) * ((g.w + 2 * g.pw) / 2 + 1);
}
static size_t fft_tiling_ws(const geom &g)
{
    return 2 * sizeof(float) * planes(g) * 32 * 17;
}
static size_t winograd_nonfused_ws(const geom &g)
{
    size_t tiles = (size_t)((g.oh + 3) / 4) * ((g.ow + 3) / 4);
    return sizeof(float) * 36 * ((size_t)g.k * g.c + (size_t)g.n * (g.c + g.k) * tiles);
}

static const cudnnDeterminism_t DET = CUDNN_DETERMINISTIC, NONDET = CUDNN_NON_DETERMINISTIC;
static const algo_row fwd_algos[] = {
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, DET, winograd_nonfused_ok, winograd_nonfused_ws},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, DET, fft_tiling_ok, fft_tiling_ws},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, DET, always, index_ws},
    {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, DET, always, im2col_ws},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, DET, always, no_ws},
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, DET, winograd_ok, no_ws},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT, DET, fft_ok, fft_ws},
    {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, DET, never, no_ws},
};
static const algo_row bwd_data_algos[] = {
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, NONDET, always, no_ws},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, DET, winograd_nonfused_ok, winograd_nonfused_ws},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, DET, fft_tiling_ok, fft_tiling_ws},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, DET, always, filter_ws},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, DET, fft_ok, fft_ws},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, DET, winograd_ok, no_ws},
};
static const algo_row bwd_filter_algos[] = {
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, NONDET, always, no_ws},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, NONDET, always, filter_ws},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, DET, winograd_nonfused_ok, winograd_nonfused_ws},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, DET, always, filter_ws},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, DET, fft_ok, fft_ws},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, DET, fft_tiling_ok, fft_tiling_ws},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, DET, never, no_ws},
};

template <size_t N> static const algo_row *find_algo(const algo_row (&table)[N], int algo)
{
    for (const algo_row &a : table)
        if (a.algo == algo) return &a;
    return NULL;
}

/* A _v7 heuristic: every algorithm, the supported ones first in rank order,
 * then the others with status NOT_SUPPORTED; at most requested entries. */
template <class Perf, size_t N>
static cudnnStatus_t rank(const algo_row (&table)[N], const char *fn, const geom &g, cudnnMathType_t math,
                          int requested, int *returned, Perf *perf)
{
    if (requested <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "requestedAlgoCount %d is not positive", requested);
    if (!returned || !perf) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL returnedAlgoCount or perfResults");
    int got = 0;
    for (int pass = 0; pass < 2; pass++)
        for (const algo_row &a : table) {
            bool ok = a.supported(g);
            if (ok != (pass == 0) || got == requested) continue;
            Perf &p = perf[got++];
            std::memset(&p, 0, sizeof p);
            p.algo = (decltype(p.algo))a.algo;
            p.status = ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
            p.time = ok ? 0.01f * (float)got : -1.0f;
            p.memory = ok ? a.workspace(g) : 0;
            p.determinism = a.det;
            p.mathType = math;
        }
    *returned = got;
    return CUDNN_STATUS_SUCCESS;
}

template <size_t N>
static cudnnStatus_t workspace_size(const algo_row (&table)[N], const char *fn, const geom &g, int algo, size_t *bytes)
{
    if (!bytes) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL sizeInBytes");
    const algo_row *a = find_algo(table, algo);
    if (!a) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid algorithm %d", algo);
    if (!a->supported(g)) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "algorithm %d does not support this shape", algo);
    *bytes = a->workspace(g);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
                                                     const cudnnFilterDescriptor_t filterDesc,
                                                     const cudnnConvolutionDescriptor_t convDesc,
                                                     const cudnnTensorDescriptor_t destDesc,
                                                     const int requestedAlgoCount, int *returnedAlgoCount,
                                                     cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
    const char *fn = "cudnnGetConvolutionForwardAlgorithm_v7";
    geom g;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, srcDesc, filterDesc, convDesc, destDesc, true)) return st;
    return rank(fwd_algos, fn, g, convDesc->math, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc, const cudnnTensorDescriptor_t diffDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
    const char *fn = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    geom g;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    /* dx (gradDesc) is the forward's input, dy (diffDesc) its output */
    if (cudnnStatus_t st = conv_geom(&g, fn, gradDesc, filterDesc, convDesc, diffDesc, true)) return st;
    return rank(bwd_data_algos, fn, g, convDesc->math, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
                                                            const cudnnTensorDescriptor_t diffDesc,
                                                            const cudnnConvolutionDescriptor_t convDesc,
                                                            const cudnnFilterDescriptor_t gradDesc,
                                                            const int requestedAlgoCount, int *returnedAlgoCount,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
    const char *fn = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    geom g;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, srcDesc, gradDesc, convDesc, diffDesc, true)) return st;
    return rank(bwd_filter_algos, fn, g, convDesc->math, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                      const cudnnFilterDescriptor_t wDesc,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      const cudnnTensorDescriptor_t yDesc,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes)
{
    const char *fn = "cudnnGetConvolutionForwardWorkspaceSize";
    geom g;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, xDesc, wDesc, convDesc, yDesc, true)) return st;
    return workspace_size(fwd_algos, fn, g, algo, sizeInBytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
                                                           const cudnnTensorDescriptor_t dyDesc,
                                                           const cudnnConvolutionDescriptor_t convDesc,
                                                           const cudnnTensorDescriptor_t dxDesc,
                                                           cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes)
{
    const char *fn = "cudnnGetConvolutionBackwardDataWorkspaceSize";
    geom g;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, dxDesc, wDesc, convDesc, dyDesc, true)) return st;
    return workspace_size(bwd_data_algos, fn, g, algo, sizeInBytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                             const cudnnTensorDescriptor_t dyDesc,
                                                             const cudnnConvolutionDescriptor_t convDesc,
                                                             const cudnnFilterDescriptor_t gradDesc,
                                                             cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes)
{
    const char *fn = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
    geom g;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, xDesc, gradDesc, convDesc, dyDesc, true)) return st;
    return workspace_size(bwd_filter_algos, fn, g, algo, sizeInBytes);
}

/* ---- the convolutions ---- */
/* The bytes a tensor spans from its first element (float data). */
static size_t span(const cudnnTensorStruct *t)
{
    if (!t->n || !t->c || !t->h || !t->w) return 0;
    return ((t->n - 1) * t->sn + (t->c - 1) * t->sc + (t->h - 1) * t->sh + (t->w - 1) * t->sw + 1) * sizeof(float);
}
static size_t at(const cudnnTensorStruct *t, int n, int c, int h, int w)
{
    return n * t->sn + c * t->sc + h * t->sh + w * t->sw;
}
/* The input channel that filter channel c of output channel k reads. */
static int in_channel(const geom &g, int k, int c)
{
    return k / (g.k / g.groups) * g.c + c;
}

/* The filter element (KCRS) applied at tap (r, s): flipped for CUDNN_CONVOLUTION. */
static size_t filter_at(const geom &g, int k, int c, int r, int s)
{
    if (g.flip) r = g.r - 1 - r, s = g.s - 1 - s;
    return (((size_t)k * g.c + c) * g.r + r) * g.s + s;
}

static void check_range(const void *p, size_t bytes, const char *fn, const char *what)
{
    std::string name = std::string(fn) + " " + what;
    rm_emu_check_device_range(p, bytes, name.c_str());
}

/* alpha and beta: host floats for float data (reading them from device
 * memory would fault on a GPU). */
static cudnnStatus_t scalars(const char *fn, const void *alpha, const void *beta, double *a, double *b)
{
    if (!alpha || !beta) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL alpha or beta");
    if (rm_emu_is_device(alpha) || rm_emu_is_device(beta))
        /* real cuDNN would not report it but fault: the run ends, as on a GPU */
        rm_emu_die("%s: alpha / beta point to device memory; cuDNN reads them on the host", fn);
    *a = *(const float *)alpha, *b = *(const float *)beta;
    return CUDNN_STATUS_SUCCESS;
}

/* Any math type but FMA lets a float convolution run on TF32 tensor cores
 * (sm_80 and later), which round each operand to 10 mantissa bits (to
 * nearest, ties away); NVIDIA_TF32_OVERRIDE=0 forbids it. */
static bool uses_tf32(cudnnMathType_t m)
{
    const char *o = std::getenv("NVIDIA_TF32_OVERRIDE");
    return m != CUDNN_FMA_MATH && !(o && !std::strcmp(o, "0"));
}
static double operand(float f, bool tf32)
{
    if (!tf32 || !std::isfinite(f)) return f;
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    b = (b + 0x1000u) & ~0x1fffu;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

/* A fresh order for a non-deterministic algorithm's sums, as the arrival
 * order of its atomic adds would be: an offset into the summed range. */
static size_t scramble(size_t range)
{
    static uint64_t state = 0x2545f4914f6cdd1dull;
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return range ? (size_t)(state % range) : 0;
}

/* out = alpha acc + beta out; beta == 0 never reads out (it may be NaN). */
static void blend(float &out, double acc, double alpha, double beta)
{
    out = (float)(alpha * acc + (beta != 0.0 ? beta * (double)out : 0.0));
}

/* What the three calls check before computing: the algorithm, its
 * workspace (the size it needs, and device memory of the size given), then
 * a scribble over that workspace, as the algorithm's scratch would. */
template <size_t N>
static cudnnStatus_t prepare(const algo_row (&table)[N], const char *fn, const geom &g, int algo, void *ws,
                             size_t ws_bytes, const algo_row **row)
{
    const algo_row *a = find_algo(table, algo);
    if (!a) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid algorithm %d", algo);
    if (!a->supported(g)) return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "algorithm %d does not support this shape", algo);
    size_t need = a->workspace(g);
    if (ws_bytes < need)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "workSpaceSizeInBytes %zu is below the %zu bytes algorithm %d needs",
                    ws_bytes, need, algo);
    if (need && !ws) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL workspace, %zu bytes needed", need);
    if (ws) check_range(ws, ws_bytes, fn, "workspace"); /* all it claims to be */
    if (need) std::memset(ws, 0xff, need);
    *row = a;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
                                      const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                      void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *fn = "cudnnConvolutionForward";
    geom g;
    double al, be;
    const algo_row *a = NULL;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, xDesc, wDesc, convDesc, yDesc, true)) return st;
    if (cudnnStatus_t st = scalars(fn, alpha, beta, &al, &be)) return st;
    if (!x || !w || !y) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL x, w or y");
    if (cudnnStatus_t st = prepare(fwd_algos, fn, g, algo, workSpace, workSpaceSizeInBytes, &a)) return st;
    check_range(x, span(xDesc), fn, "x");
    check_range(w, filter_bytes(g), fn, "w");
    check_range(y, span(yDesc), fn, "y");
    const float *xf = (const float *)x, *wf = (const float *)w;
    float *yf = (float *)y;
    bool tf = uses_tf32(convDesc->math);
    for (int n = 0; n < g.n; n++)
        for (int k = 0; k < g.k; k++)
            for (int oh = 0; oh < g.oh; oh++)
                for (int ow = 0; ow < g.ow; ow++) {
                    double acc = 0.0;
                    for (int c = 0; c < g.c; c++)
                        for (int r = 0; r < g.r; r++) {
                            int ih = oh * g.u - g.ph + r * g.dh;
                            if (ih < 0 || ih >= g.h) continue;
                            for (int s = 0; s < g.s; s++) {
                                int iw = ow * g.v - g.pw + s * g.dw;
                                if (iw < 0 || iw >= g.w) continue;
                                acc += operand(xf[at(xDesc, n, in_channel(g, k, c), ih, iw)], tf) *
                                       operand(wf[filter_at(g, k, c, r, s)], tf);
                            }
                        }
                    blend(yf[at(yDesc, n, k, oh, ow)], acc, al, be);
                }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc,
                                           const void *w, const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                           size_t workSpaceSizeInBytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    const char *fn = "cudnnConvolutionBackwardData";
    geom g;
    double al, be;
    const algo_row *a = NULL;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, dxDesc, wDesc, convDesc, dyDesc, true)) return st;
    if (cudnnStatus_t st = scalars(fn, alpha, beta, &al, &be)) return st;
    if (!w || !dy || !dx) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL w, dy or dx");
    if (cudnnStatus_t st = prepare(bwd_data_algos, fn, g, algo, workSpace, workSpaceSizeInBytes, &a)) return st;
    check_range(w, filter_bytes(g), fn, "w");
    check_range(dy, span(dyDesc), fn, "dy");
    check_range(dx, span(dxDesc), fn, "dx");
    const float *wf = (const float *)w, *dyf = (const float *)dy;
    float *dxf = (float *)dx;
    bool tf = uses_tf32(convDesc->math), nondet = a->det == CUDNN_NON_DETERMINISTIC;
    /* Scattered from each dy element to the dx elements it was computed
     * from: in double in a fixed order, or (non-deterministic) in float in
     * an order that changes from call to call. */
    int cx = g.c * g.groups; /* dx's channels */
    size_t plane = (size_t)cx * g.h * g.w, outs = (size_t)g.k * g.oh * g.ow;
    std::vector<double> acc(nondet ? 0 : (size_t)g.n * plane, 0.0);
    std::vector<float> accf(nondet ? (size_t)g.n * plane : 0, 0.0f);
    for (int n = 0; n < g.n; n++) {
        size_t off = nondet ? scramble(outs) : 0;
        for (size_t t0 = 0; t0 < outs; t0++) {
            size_t t = (t0 + off) % outs;
            int k = (int)(t / ((size_t)g.oh * g.ow)), oh = (int)(t / g.ow % g.oh), ow = (int)(t % g.ow);
            double d = operand(dyf[at(dyDesc, n, k, oh, ow)], tf);
            for (int c = 0; c < g.c; c++)
                for (int r = 0; r < g.r; r++) {
                    int ih = oh * g.u - g.ph + r * g.dh;
                    if (ih < 0 || ih >= g.h) continue;
                    for (int s = 0; s < g.s; s++) {
                        int iw = ow * g.v - g.pw + s * g.dw;
                        if (iw < 0 || iw >= g.w) continue;
                        size_t i = n * plane + ((size_t)in_channel(g, k, c) * g.h + ih) * g.w + iw;
                        double p = d * operand(wf[filter_at(g, k, c, r, s)], tf);
                        if (nondet)
                            accf[i] += (float)p;
                        else
                            acc[i] += p;
                    }
                }
        }
    }
    for (int n = 0; n < g.n; n++)
        for (int c = 0; c < cx; c++)
            for (int h = 0; h < g.h; h++)
                for (int w0 = 0; w0 < g.w; w0++) {
                    size_t i = n * plane + ((size_t)c * g.h + h) * g.w + w0;
                    blend(dxf[at(dxDesc, n, c, h, w0)], nondet ? accf[i] : acc[i], al, be);
                }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                             const cudnnConvolutionDescriptor_t convDesc,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
                                             size_t workSpaceSizeInBytes, const void *beta,
                                             const cudnnFilterDescriptor_t dwDesc, void *dw)
{
    const char *fn = "cudnnConvolutionBackwardFilter";
    geom g;
    double al, be;
    const algo_row *a = NULL;
    if (cudnnStatus_t st = check_handle(handle, fn)) return st;
    if (cudnnStatus_t st = conv_geom(&g, fn, xDesc, dwDesc, convDesc, dyDesc, true)) return st;
    if (cudnnStatus_t st = scalars(fn, alpha, beta, &al, &be)) return st;
    if (!x || !dy || !dw) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL x, dy or dw");
    if (cudnnStatus_t st = prepare(bwd_filter_algos, fn, g, algo, workSpace, workSpaceSizeInBytes, &a)) return st;
    check_range(x, span(xDesc), fn, "x");
    check_range(dy, span(dyDesc), fn, "dy");
    check_range(dw, filter_bytes(g), fn, "dw");
    const float *xf = (const float *)x, *dyf = (const float *)dy;
    float *dwf = (float *)dw;
    bool tf = uses_tf32(convDesc->math), nondet = a->det == CUDNN_NON_DETERMINISTIC;
    size_t outs = (size_t)g.n * g.oh * g.ow;
    /* Each dw element sums over every (image, output pixel): in double in a
     * fixed order, or (non-deterministic) in float from a fresh offset. */
    for (int k = 0; k < g.k; k++)
        for (int c = 0; c < g.c; c++)
            for (int r = 0; r < g.r; r++)
                for (int s = 0; s < g.s; s++) {
                    double acc = 0.0;
                    float accf = 0.0f;
                    size_t off = nondet ? scramble(outs) : 0;
                    for (size_t t0 = 0; t0 < outs; t0++) {
                        size_t t = (t0 + off) % outs;
                        int n = (int)(t / ((size_t)g.oh * g.ow)), oh = (int)(t / g.ow % g.oh), ow = (int)(t % g.ow);
                        int ih = oh * g.u - g.ph + r * g.dh, iw = ow * g.v - g.pw + s * g.dw;
                        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                        double p = operand(xf[at(xDesc, n, in_channel(g, k, c), ih, iw)], tf) *
                                   operand(dyf[at(dyDesc, n, k, oh, ow)], tf);
                        if (nondet)
                            accf += (float)p;
                        else
                            acc += p;
                    }
                    blend(dwf[filter_at(g, k, c, r, s)], nondet ? accf : acc, al, be);
                }
    return CUDNN_STATUS_SUCCESS;
}

/* ---- batch normalization (spatial: statistics per channel over n, h, w) ---- */
cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc,
                                            cudnnBatchNormMode_t mode)
{
    const char *fn = "cudnnDeriveBNTensorDescriptor";
    if (!alive(derivedBnDesc, TENSOR)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid derived descriptor");
    if (cudnnStatus_t st = check_tensor(xDesc, fn, "x")) return st;
    if (mode != CUDNN_BATCHNORM_PER_ACTIVATION && mode != CUDNN_BATCHNORM_SPATIAL &&
        mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid batch normalization mode %d", (int)mode);
    /* 1xCx1x1 (1xCxHxW per activation); float for half and bfloat16 data */
    bool spatial = mode != CUDNN_BATCHNORM_PER_ACTIVATION;
    cudnnDataType_t type = xDesc->type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    return cudnnSetTensor4dDescriptor(derivedBnDesc, CUDNN_TENSOR_NCHW, type, 1, xDesc->c, spatial ? 1 : xDesc->h,
                                      spatial ? 1 : xDesc->w);
}

/* The checks all three calls share: the handle, the mode, the data
 * descriptors (all of x's dimensions and type), the 1xCx1x1 parameter
 * descriptor, epsilon. */
static cudnnStatus_t bn_check(const char *fn, cudnnHandle_t h, cudnnBatchNormMode_t mode, const cudnnTensorStruct *x,
                              const cudnnTensorStruct *y, const cudnnTensorStruct *z, const cudnnTensorStruct *p,
                              double eps)
{
    if (cudnnStatus_t st = check_handle(h, fn)) return st;
    if (mode == CUDNN_BATCHNORM_PER_ACTIVATION)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "the emulator has spatial batch normalization only");
    if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid mode %d", (int)mode);
    if (cudnnStatus_t st = check_tensor(x, fn, "x")) return st;
    for (const cudnnTensorStruct *t : {y, z}) {
        if (!t) continue;
        if (cudnnStatus_t st = check_tensor(t, fn, "data")) return st;
        if (t->n != x->n || t->c != x->c || t->h != x->h || t->w != x->w || t->type != x->type)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "data descriptors differ in dimensions or data type");
    }
    if (cudnnStatus_t st = check_tensor(p, fn, "scale/bias/mean/variance")) return st;
    if (p->n != 1 || p->c != x->c || p->h != 1 || p->w != 1)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "parameter descriptor is %dx%dx%dx%d, not 1x%dx1x1", p->n, p->c, p->h,
                    p->w, x->c);
    if (x->type != CUDNN_DATA_FLOAT || p->type != CUDNN_DATA_FLOAT)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "the emulator has float data only");
    if (!(eps >= CUDNN_BN_MIN_EPSILON))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "epsilon %g is below CUDNN_BN_MIN_EPSILON (%g)", eps,
                    (double)CUDNN_BN_MIN_EPSILON);
    return CUDNN_STATUS_SUCCESS;
}

/* Per channel: the mean and biased variance of x over n, h, w, two-pass in
 * double. */
static void bn_stats(const cudnnTensorStruct *xd, const float *x, int c, double *mean, double *var)
{
    double m = (double)xd->n * xd->h * xd->w, sum = 0.0, sq = 0.0;
    for (int n = 0; n < xd->n; n++)
        for (int h = 0; h < xd->h; h++)
            for (int w = 0; w < xd->w; w++) sum += x[at(xd, n, c, h, w)];
    *mean = sum / m;
    for (int n = 0; n < xd->n; n++)
        for (int h = 0; h < xd->h; h++)
            for (int w = 0; w < xd->w; w++) {
                double d = x[at(xd, n, c, h, w)] - *mean;
                sq += d * d;
            }
    *var = sq / m;
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha,
                                                     const void *beta, const cudnnTensorDescriptor_t xDesc,
                                                     const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
                                                     const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
                                                     const void *bnScale, const void *bnBias,
                                                     double exponentialAverageFactor, void *resultRunningMean,
                                                     void *resultRunningVariance, double epsilon, void *resultSaveMean,
                                                     void *resultSaveInvVariance)
{
    const char *fn = "cudnnBatchNormalizationForwardTraining";
    double al, be;
    if (cudnnStatus_t st = bn_check(fn, handle, mode, xDesc, yDesc, NULL, bnScaleBiasMeanVarDesc, epsilon)) return st;
    if (cudnnStatus_t st = scalars(fn, alpha, beta, &al, &be)) return st;
    if (!x || !y || !bnScale || !bnBias) return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL x, y, bnScale or bnBias");
    if (!resultRunningMean != !resultRunningVariance)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "exactly one of resultRunningMean, resultRunningVariance is NULL");
    if (!resultSaveMean != !resultSaveInvVariance)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "exactly one of resultSaveMean, resultSaveInvVariance is NULL");
    size_t pb = span(bnScaleBiasMeanVarDesc);
    check_range(x, span(xDesc), fn, "x");
    check_range(y, span(yDesc), fn, "y");
    check_range(bnScale, pb, fn, "bnScale");
    check_range(bnBias, pb, fn, "bnBias");
    if (resultRunningMean) check_range(resultRunningMean, pb, fn, "resultRunningMean");
    if (resultRunningVariance) check_range(resultRunningVariance, pb, fn, "resultRunningVariance");
    if (resultSaveMean) check_range(resultSaveMean, pb, fn, "resultSaveMean");
    if (resultSaveInvVariance) check_range(resultSaveInvVariance, pb, fn, "resultSaveInvVariance");
    const cudnnTensorStruct *xd = xDesc, *yd = yDesc;
    const float *xf = (const float *)x, *scale = (const float *)bnScale, *bias = (const float *)bnBias;
    float *yf = (float *)y;
    double m = (double)xd->n * xd->h * xd->w, f = exponentialAverageFactor;
    for (int c = 0; c < xd->c; c++) {
        double mean, var;
        bn_stats(xd, xf, c, &mean, &var);
        double inv_std = 1.0 / std::sqrt(var + epsilon);
        for (int n = 0; n < xd->n; n++)
            for (int h = 0; h < xd->h; h++)
                for (int w = 0; w < xd->w; w++)
                    blend(yf[at(yd, n, c, h, w)], scale[c] * ((xf[at(xd, n, c, h, w)] - mean) * inv_std) + bias[c], al,
                          be);
        /* running = (1 - factor) running + factor batch; the variance folded
         * in is the unbiased one (cuDNN's documented "sample variance") */
        if (resultRunningMean) {
            float *rm = (float *)resultRunningMean, *rv = (float *)resultRunningVariance;
            double unbiased = m > 1.0 ? var * m / (m - 1.0) : var;
            rm[c] = (float)((1.0 - f) * rm[c] + f * mean);
            rv[c] = (float)((1.0 - f) * rv[c] + f * unbiased);
        }
        /* the cache cudnnBatchNormalizationBackward may be given: the mean
         * and the inverse standard deviation (what "InvVariance" holds) */
        if (resultSaveMean) {
            ((float *)resultSaveMean)[c] = (float)mean;
            ((float *)resultSaveInvVariance)[c] = (float)inv_std;
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias,
    const void *estimatedMean, const void *estimatedVariance, double epsilon)
{
    const char *fn = "cudnnBatchNormalizationForwardInference";
    double al, be;
    if (cudnnStatus_t st = bn_check(fn, handle, mode, xDesc, yDesc, NULL, bnScaleBiasMeanVarDesc, epsilon)) return st;
    if (cudnnStatus_t st = scalars(fn, alpha, beta, &al, &be)) return st;
    if (!x || !y || !bnScale || !bnBias || !estimatedMean || !estimatedVariance)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL x, y, bnScale, bnBias, estimatedMean or estimatedVariance");
    size_t pb = span(bnScaleBiasMeanVarDesc);
    check_range(x, span(xDesc), fn, "x");
    check_range(y, span(yDesc), fn, "y");
    check_range(bnScale, pb, fn, "bnScale");
    check_range(bnBias, pb, fn, "bnBias");
    check_range(estimatedMean, pb, fn, "estimatedMean");
    check_range(estimatedVariance, pb, fn, "estimatedVariance");
    const float *xf = (const float *)x, *scale = (const float *)bnScale, *bias = (const float *)bnBias;
    const float *em = (const float *)estimatedMean, *ev = (const float *)estimatedVariance;
    float *yf = (float *)y;
    for (int c = 0; c < xDesc->c; c++) {
        double inv_std = 1.0 / std::sqrt((double)ev[c] + epsilon);
        for (int n = 0; n < xDesc->n; n++)
            for (int h = 0; h < xDesc->h; h++)
                for (int w = 0; w < xDesc->w; w++)
                    blend(yf[at(yDesc, n, c, h, w)],
                          scale[c] * ((xf[at(xDesc, n, c, h, w)] - em[c]) * inv_std) + bias[c], al, be);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alphaDataDiff, const void *betaDataDiff,
    const void *alphaParamDiff, const void *betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScale, void *dBnScaleResult, void *dBnBiasResult,
    double epsilon, const void *savedMean, const void *savedInvVariance)
{
    const char *fn = "cudnnBatchNormalizationBackward";
    double ad, bd, ap, bp;
    if (cudnnStatus_t st = bn_check(fn, handle, mode, xDesc, dyDesc, dxDesc, dBnScaleBiasDesc, epsilon)) return st;
    if (cudnnStatus_t st = scalars(fn, alphaDataDiff, betaDataDiff, &ad, &bd)) return st;
    if (cudnnStatus_t st = scalars(fn, alphaParamDiff, betaParamDiff, &ap, &bp)) return st;
    if (!x || !dy || !dx || !bnScale || !dBnScaleResult || !dBnBiasResult)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "NULL x, dy, dx, bnScale, dBnScaleResult or dBnBiasResult");
    if (!savedMean != !savedInvVariance)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "exactly one of savedMean, savedInvVariance is NULL");
    size_t pb = span(dBnScaleBiasDesc);
    check_range(x, span(xDesc), fn, "x");
    check_range(dy, span(dyDesc), fn, "dy");
    check_range(dx, span(dxDesc), fn, "dx");
    check_range(bnScale, pb, fn, "bnScale");
    check_range(dBnScaleResult, pb, fn, "dBnScaleResult");
    check_range(dBnBiasResult, pb, fn, "dBnBiasResult");
    if (savedMean) check_range(savedMean, pb, fn, "savedMean");
    if (savedInvVariance) check_range(savedInvVariance, pb, fn, "savedInvVariance");
    const cudnnTensorStruct *xd = xDesc, *dyd = dyDesc, *dxd = dxDesc;
    const float *xf = (const float *)x, *dyf = (const float *)dy, *scale = (const float *)bnScale;
    float *dxf = (float *)dx, *dscale = (float *)dBnScaleResult, *dbias = (float *)dBnBiasResult;
    double m = (double)xd->n * xd->h * xd->w;
    for (int c = 0; c < xd->c; c++) {
        /* the forward's statistics: from its cache, else recomputed */
        double mean, inv_std;
        if (savedMean) {
            mean = ((const float *)savedMean)[c];
            inv_std = ((const float *)savedInvVariance)[c];
        } else {
            double var;
            bn_stats(xd, xf, c, &mean, &var);
            inv_std = 1.0 / std::sqrt(var + epsilon);
        }
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int n = 0; n < xd->n; n++)
            for (int h = 0; h < xd->h; h++)
                for (int w = 0; w < xd->w; w++) {
                    double d = dyf[at(dyd, n, c, h, w)];
                    sum_dy += d;
                    sum_dy_xhat += d * ((xf[at(xd, n, c, h, w)] - mean) * inv_std);
                }
        /* dx = scale inv_std (dy - mean(dy) - xhat mean(dy xhat)) */
        for (int n = 0; n < xd->n; n++)
            for (int h = 0; h < xd->h; h++)
                for (int w = 0; w < xd->w; w++) {
                    double xhat = (xf[at(xd, n, c, h, w)] - mean) * inv_std;
                    double g = scale[c] * inv_std * (dyf[at(dyd, n, c, h, w)] - sum_dy / m - xhat * sum_dy_xhat / m);
                    blend(dxf[at(dxd, n, c, h, w)], g, ad, bd);
                }
        blend(dscale[c], sum_dy_xhat, ap, bp);
        blend(dbias[c], sum_dy, ap, bp);
    }
    return CUDNN_STATUS_SUCCESS;
}
