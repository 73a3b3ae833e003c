/* Transposed 2x2, stride-2 convolution on the GPU, three kernel libraries
 * (backend_cuda.h), all deterministic. Weight layout (Cin, Cout, 2, 2).
 *  - hand-written: every output pixel comes from exactly one input pixel, so
 *    forward and the data gradient are one thread per output element summing
 *    in double in the CPU reference's order (ci, resp. q = (co, a, b)); the
 *    weight and bias gradients are one block per parameter with a fixed-tree
 *    sum. Exact, and the fallback of the other two.
 *  - cublas: per image the layer is one matrix product between the
 *    (Cout*4) x (H*W) "pixel-shuffled" output and the Cin x (H*W) input;
 *    strided-batched SGEMMs through a column buffer in the workspace, and a
 *    gather / scatter kernel between that buffer and the NCHW tensor.
 *  - cudnn: a transposed convolution is the data gradient of the ordinary
 *    2x2 / stride-2 convolution from the (Cout, 2H, 2W) tensor to the
 *    (Cin, H, W) one, whose filter (K = Cin, C = Cout, 2, 2) is exactly this
 *    layer's weight: forward = backward-data, data gradient = forward,
 *    weight gradient = backward-filter with the roles of x and dy swapped. */
#include "cuda_kernel_libs.cuh"

typedef struct convt_geom {
    int n, cin, h, w, cout;
} convt_geom;

/* y[n][co][2i+a][2j+b] = b[co] + sum_ci w[ci][co][a][b] x[n][ci][i][j]. */
static __global__ void conv_transpose2x2_forward_kernel(float *y, const float *w, const float *bias, const float *x,
                                                        convt_geom g)
{
    size_t hw = (size_t)g.h * g.w, ow = 2 * (size_t)g.w, oplane = 4 * hw, qdim = 4 * (size_t)g.cout;
    RM_CUDA_FOR(o, (size_t)g.n * g.cout * oplane)
    {
        size_t r = o % oplane, co = o / oplane % g.cout, n = o / oplane / g.cout;
        size_t oy = r / ow, ox = r % ow, q = co * 4 + (oy % 2) * 2 + ox % 2, ij = (oy / 2) * g.w + ox / 2;
        const float *xn = x + n * g.cin * hw;
        double acc = bias ? (double)bias[co] : 0.0;
        for (int ci = 0; ci < g.cin; ci++) acc += (double)w[ci * qdim + q] * (double)xn[ci * hw + ij];
        y[o] = (float)acc;
    }
}

/* dx[n][ci][i][j] = sum_q w[ci][q] dy[n][co][2i+a][2j+b], q = (co, a, b) ascending. */
static __global__ void conv_transpose2x2_backward_data_kernel(float *dx, const float *w, const float *dy, convt_geom g)
{
    size_t hw = (size_t)g.h * g.w, ow = 2 * (size_t)g.w, qdim = 4 * (size_t)g.cout;
    RM_CUDA_FOR(o, (size_t)g.n * g.cin * hw)
    {
        size_t ij = o % hw, ci = o / hw % g.cin, n = o / hw / g.cin, i = ij / g.w, j = ij % g.w;
        const float *dyn = dy + n * qdim * hw;
        double acc = 0.0;
        for (size_t q = 0; q < qdim; q++) {
            size_t co = q / 4, a = q / 2 % 2, b = q % 2;
            acc += (double)w[ci * qdim + q] * (double)dyn[(co * 2 * g.h + 2 * i + a) * ow + 2 * j + b];
        }
        dx[o] = (float)acc;
    }
}

/* One block per weight (ci, q): dw = sum_{n, ij} x[n][ci][ij] dy[n][q at ij]. */
static __global__ void conv_transpose2x2_backward_weight_kernel(float *dw, const float *x, const float *dy,
                                                                convt_geom g)
{
    size_t hw = (size_t)g.h * g.w, ow = 2 * (size_t)g.w, qdim = 4 * (size_t)g.cout;
    size_t ci = blockIdx.x / qdim, q = blockIdx.x % qdim, co = q / 4, a = q / 2 % 2, b = q % 2;
    double acc = 0.0;
    for (size_t m = threadIdx.x; m < (size_t)g.n * hw; m += RM_THREADS) {
        size_t n = m / hw, ij = m % hw, i = ij / g.w, j = ij % g.w;
        acc += (double)x[(n * g.cin + ci) * hw + ij] *
               (double)dy[n * qdim * hw + (co * 2 * g.h + 2 * i + a) * ow + 2 * j + b];
    }
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) dw[blockIdx.x] = (float)acc;
}

/* One block per output channel: db = sum of its 2h x 2w planes over the batch. */
static __global__ void conv_transpose2x2_backward_bias_kernel(float *db, const float *dy, convt_geom g)
{
    size_t oplane = 4 * (size_t)g.h * g.w, co = blockIdx.x;
    double acc = 0.0;
    for (size_t m = threadIdx.x; m < (size_t)g.n * oplane; m += RM_THREADS)
        acc += dy[(m / oplane * g.cout + co) * oplane + m % oplane];
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) db[co] = (float)acc;
}

static convt_geom convt_geom_of(const rm_layer_config *cfg, rm_shape x)
{
    convt_geom g = {x.n, x.c, x.h, x.w, cfg->out_channels};
    return g;
}

static int hw_forward(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, rm_err *e)
{
    conv_transpose2x2_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, st>>>(
        call->out->data, call->params->w.data, call->params->b.data, call->in[0]->data, g);
    RM_CUDA_LAUNCHED(e, "conv_transpose2x2_forward_kernel");
    return RM_OK;
}

static int hw_backward_data(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, rm_err *e)
{
    rm_tensor *dx = call->din[0];
    conv_transpose2x2_backward_data_kernel<<<rm_cuda_blocks(rm_tensor_numel(dx)), RM_THREADS, 0, st>>>(
        dx->data, call->params->w.data, call->dout->data, g);
    RM_CUDA_LAUNCHED(e, "conv_transpose2x2_backward_data_kernel");
    return RM_OK;
}

static int hw_backward_weight(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, rm_err *e)
{
    size_t nw = (size_t)g.cin * 4 * g.cout;
    if (nw > 0x7fffffffu) return rm_errorf(e, RM_ERR_INVALID, "conv_transpose backward: %zu weights", nw);
    conv_transpose2x2_backward_weight_kernel<<<(unsigned)nw, RM_THREADS, 0, st>>>(
        call->params->dw.data, call->in[0]->data, call->dout->data, g);
    RM_CUDA_LAUNCHED(e, "conv_transpose2x2_backward_weight_kernel");
    return RM_OK;
}

static int hw_backward_bias(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, rm_err *e)
{
    conv_transpose2x2_backward_bias_kernel<<<(unsigned)g.cout, RM_THREADS, 0, st>>>(call->params->db.data,
                                                                                    call->dout->data, g);
    RM_CUDA_LAUNCHED(e, "conv_transpose2x2_backward_bias_kernel");
    return RM_OK;
}

/* ---- cuBLAS ----
 * The column buffer of image il: t[il][q][ij], q = (co, a, b), ij = (i, j),
 * standing for y[img][co][2i + a][2j + b]. */

/* y[img0 + il][co][2i+a][2j+b] = t[il][q][ij] + bias[co]. */
static __global__ void convt_scatter_kernel(float *y, const float *t, const float *bias, convt_geom g, size_t img0,
                                            size_t nimg)
{
    size_t hw = (size_t)g.h * g.w, qdim = 4 * (size_t)g.cout, ow = 2 * (size_t)g.w;
    RM_CUDA_FOR(k, nimg * qdim * hw)
    {
        size_t ij = k % hw, q = k / hw % qdim, il = k / hw / qdim, co = q / 4, a = q / 2 % 2, b = q % 2;
        size_t i = ij / g.w, j = ij % g.w;
        y[((img0 + il) * g.cout + co) * 4 * hw + (2 * i + a) * ow + 2 * j + b] = t[k] + (bias ? bias[co] : 0.0f);
    }
}

/* t[il][q][ij] = dy[img0 + il][co][2i+a][2j+b]. */
static __global__ void convt_gather_kernel(float *t, const float *dy, convt_geom g, size_t img0, size_t nimg)
{
    size_t hw = (size_t)g.h * g.w, qdim = 4 * (size_t)g.cout, ow = 2 * (size_t)g.w;
    RM_CUDA_FOR(k, nimg * qdim * hw)
    {
        size_t ij = k % hw, q = k / hw % qdim, il = k / hw / qdim, co = q / 4, a = q / 2 % 2, b = q % 2;
        size_t i = ij / g.w, j = ij % g.w;
        t[k] = dy[((img0 + il) * g.cout + co) * 4 * hw + (2 * i + a) * ow + 2 * j + b];
    }
}

/* Images per chunk: as many column buffers as fit rm_cuda_gemm_ws_cap(), at least one. */
static size_t convt_chunk_images(const convt_geom &g)
{
    size_t image = 4 * (size_t)g.cout * g.h * g.w * sizeof(float), ic = image ? rm_cuda_gemm_ws_cap() / image : 1;
    if (ic < 1) ic = 1;
    return ic < (size_t)g.n ? ic : (size_t)g.n;
}

static size_t convt_gemm_bytes(const convt_geom &g)
{
    return convt_chunk_images(g) * 4 * (size_t)g.cout * g.h * g.w * sizeof(float);
}

extern "C" size_t rm_conv_transpose2x2_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin,
                                                      rm_shape out, int backward)
{
    (void)nin, (void)out, (void)backward;
    size_t gemm = convt_gemm_bytes(convt_geom_of(cfg, in[0]));
    return gemm > RM_CUDNN_WS_FLOOR ? gemm : RM_CUDNN_WS_FLOOR;
}

static int gemm_forward(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, rm_err *e)
{
    size_t hw = (size_t)g.h * g.w, qdim = 4 * (size_t)g.cout, n = (size_t)g.n, cin = (size_t)g.cin;
    size_t ic = convt_chunk_images(g);
    void *ws, *owned;
    int rc = rm_cuda_workspace(&ws, &owned, call, convt_gemm_bytes(g), "conv_transpose forward (cublas)", e);
    if (rc) return rc;
    float *t = (float *)ws;
    for (size_t img0 = 0; img0 < n && !rc; img0 += ic) {
        size_t nimg = n - img0 < ic ? n - img0 : ic;
        /* t[il][q][ij] = sum_ci w[ci][q] x[img][ci][ij] */
        rc = rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_T, hw, qdim, cin, call->in[0]->data + img0 * cin * hw, hw,
                      (long long)(cin * hw), call->params->w.data, qdim, 0, 0.0f, t, hw, (long long)(qdim * hw), nimg,
                      "conv_transpose forward sgemm", e);
        if (rc) break;
        convt_scatter_kernel<<<rm_cuda_blocks(nimg * qdim * hw), RM_THREADS, 0, st>>>(
            call->out->data, t, call->params->b.data, g, img0, nimg);
        cudaError_t cst = cudaGetLastError();
        if (cst != cudaSuccess)
            rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: convt_scatter_kernel failed: %s", cudaGetErrorString(cst));
    }
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    return rc ? rc : rc2;
}

static int gemm_backward(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, rm_err *e)
{
    size_t hw = (size_t)g.h * g.w, qdim = 4 * (size_t)g.cout, n = (size_t)g.n, cin = (size_t)g.cin;
    size_t ic = convt_chunk_images(g);
    rm_tensor *dx = call->din[0];
    float *dw = call->params->dw.data;
    const float *x = call->in[0]->data, *w = call->params->w.data;
    int want_dx = dx && dx->data;
    void *ws, *owned;
    int rc = rm_cuda_workspace(&ws, &owned, call, want_dx || dw ? convt_gemm_bytes(g) : 0,
                               "conv_transpose backward (cublas)", e);
    if (rc) return rc;
    float *t = (float *)ws;
    for (size_t img0 = 0; img0 < n && (want_dx || dw) && !rc; img0 += ic) {
        size_t nimg = n - img0 < ic ? n - img0 : ic;
        convt_gather_kernel<<<rm_cuda_blocks(nimg * qdim * hw), RM_THREADS, 0, st>>>(t, call->dout->data, g, img0,
                                                                                     nimg);
        cudaError_t cst = cudaGetLastError();
        if (cst != cudaSuccess) {
            rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: convt_gather_kernel failed: %s", cudaGetErrorString(cst));
            break;
        }
        /* dx[img][ci][ij] = sum_q w[ci][q] t[il][q][ij] */
        if (want_dx)
            rc = rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_N, hw, cin, qdim, t, hw, (long long)(qdim * hw), w, qdim, 0,
                          0.0f, dx->data + img0 * cin * hw, hw, (long long)(cin * hw), nimg,
                          "conv_transpose backward-data sgemm", e);
        /* dw[ci][q] (+)= sum_ij t[il][q][ij] x[img][ci][ij], image after image */
        for (size_t il = 0; dw && il < nimg && !rc; il++)
            rc = rm_sgemm(call->be, CUBLAS_OP_T, CUBLAS_OP_N, qdim, cin, hw, t + il * qdim * hw, hw, 0,
                          x + (img0 + il) * cin * hw, hw, 0, img0 + il == 0 ? 0.0f : 1.0f, dw, qdim, 0, 1,
                          "conv_transpose backward-filter sgemm", e);
    }
    if (!rc && call->params->db.data) rc = hw_backward_bias(call, g, st, e);
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    return rc ? rc : rc2;
}

/* ---- cuDNN: the layer as the data gradient of a 2x2 / stride-2 convolution ---- */
#ifdef REMAT_HAVE_CUDNN
enum { CONVT_PLAN_TAG = 0x434e5654 }; /* "CNVT" */

static int convt_plan(rm_cudnn_conv **plan, int *owned, const rm_backend *be, const rm_layer_config *cfg,
                      const convt_geom &g, rm_err *e)
{
    rm_shape xs = rm_shape_make(g.n, g.cin, g.h, g.w), ys = rm_shape_make(g.n, g.cout, 2 * g.h, 2 * g.w);
    size_t cap = rm_conv_transpose2x2_workspace_cuda(cfg, &xs, 1, ys, 0);
    /* The ordinary convolution: (n, cout, 2h, 2w) -> (n, cin, h, w), filter (cin, cout, 2, 2). */
    const rm_cudnn_conv_desc d = {g.n, g.cout, 2 * g.h, 2 * g.w, g.cin, 2, 2, 2, 2, 0, 0, 1, 1, 1};
    return rm_cudnn_conv_get(plan, owned, be, CONVT_PLAN_TAG, &d, cap, e);
}

static int cudnn_forward(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, int *done, rm_err *e)
{
    *done = 0;
    rm_cudnn_conv *plan;
    int owned_plan;
    int rc = convt_plan(&plan, &owned_plan, call->be, call->cfg, g, e);
    if (rc) return rc;
    /* y = the convolution's data gradient from (w, x) */
    return rm_cudnn_layer_forward(call, plan, owned_plan, RM_CONV_BWD_DATA, call->params->w.data, call->in[0]->data,
                                  g.n, g.cout, 4 * (size_t)g.h * g.w, st, "conv_transpose forward (cudnn)", done, e);
}

static int cudnn_backward(const rm_layer_call *call, const convt_geom &g, cudaStream_t st, rm_err *e)
{
    static const rm_conv_fallbacks<convt_geom> hw = {hw_backward_data, hw_backward_weight, hw_backward_bias};
    rm_cudnn_conv *plan;
    int owned_plan;
    int rc = convt_plan(&plan, &owned_plan, call->be, call->cfg, g, e);
    if (rc) return rc;
    /* dx = conv(dy, w); for dw the convolution's input is dy, its output gradient is x */
    return rm_cudnn_layer_backward(call, plan, owned_plan, RM_CONV_FWD, call->dout->data, call->params->w.data,
                                   call->dout->data, call->in[0]->data, "conv_transpose backward (cudnn)", g, hw, st,
                                   e);
}
#endif

/* ---- the kernels of each library (rm_conv_transpose2x2_cuda_kernels chooses) ---- */

static size_t hw_workspace(const rm_backend *, const rm_layer_config *, const rm_shape *, int, rm_shape, int)
{
    return 0; /* the direct kernels need no scratch */
}

static size_t gemm_workspace(const rm_backend *, const rm_layer_config *cfg, const rm_shape *in, int, rm_shape, int)
{
    return convt_gemm_bytes(convt_geom_of(cfg, in[0]));
}

/* The hand-written kernels: every library's default, and the fallback. */
extern "C" int rm_conv_transpose2x2_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    return hw_forward(call, convt_geom_of(call->cfg, call->in[0]->shape), rm_cuda_stream(call->be), e);
}

extern "C" int rm_conv_transpose2x2_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    convt_geom g = convt_geom_of(call->cfg, call->in[0]->shape);
    cudaStream_t st = rm_cuda_stream(call->be);
    rm_tensor *dx = call->din[0];
    int rc = RM_OK;
    if (dx && dx->data) rc = hw_backward_data(call, g, st, e);
    if (!rc && call->params->dw.data) rc = hw_backward_weight(call, g, st, e);
    if (!rc && call->params->db.data) rc = hw_backward_bias(call, g, st, e);
    return rc;
}

static int gemm_forward_call(const rm_layer_call *call, rm_err *e)
{
    return gemm_forward(call, convt_geom_of(call->cfg, call->in[0]->shape), rm_cuda_stream(call->be), e);
}

static int gemm_backward_call(const rm_layer_call *call, rm_err *e)
{
    return gemm_backward(call, convt_geom_of(call->cfg, call->in[0]->shape), rm_cuda_stream(call->be), e);
}

#ifdef REMAT_HAVE_CUDNN
static size_t cudnn_workspace(const rm_backend *be, const rm_layer_config *cfg, const rm_shape *in, int nin,
                              rm_shape out, int backward)
{
    convt_geom g = convt_geom_of(cfg, in[0]);
    rm_cudnn_conv *plan;
    int owned_plan;
    rm_err e{};
    size_t cap = rm_conv_transpose2x2_workspace_cuda(cfg, in, nin, out, 0);
    if (convt_plan(&plan, &owned_plan, be, cfg, g, &e)) return cap; /* cannot ask cuDNN: the bound is enough */
    /* forward: the convolution's data gradient; backward: dx by its forward */
    return rm_cudnn_layer_workspace(plan, owned_plan, be, RM_CONV_BWD_DATA, RM_CONV_FWD, backward, cap);
}

static int cudnn_forward_call(const rm_layer_call *call, rm_err *e)
{
    convt_geom g = convt_geom_of(call->cfg, call->in[0]->shape);
    cudaStream_t st = rm_cuda_stream(call->be);
    int done = 0, rc = cudnn_forward(call, g, st, &done, e);
    if (rc || done) return rc;
    rm_cuda_note_fallback(call->be);
    return hw_forward(call, g, st, e);
}

static int cudnn_backward_call(const rm_layer_call *call, rm_err *e)
{
    return cudnn_backward(call, convt_geom_of(call->cfg, call->in[0]->shape), rm_cuda_stream(call->be), e);
}
#endif

extern "C" rm_layer_kernels rm_conv_transpose2x2_cuda_kernels(int lib)
{
    rm_layer_kernels k = {rm_conv_transpose2x2_forward_cuda, rm_conv_transpose2x2_backward_cuda, hw_workspace};
    if (lib == RM_CUDA_KERNELS_CUBLAS) k = {gemm_forward_call, gemm_backward_call, gemm_workspace};
#ifdef REMAT_HAVE_CUDNN
    if (lib == RM_CUDA_KERNELS_CUDNN) k = {cudnn_forward_call, cudnn_backward_call, cudnn_workspace};
#endif
    return k;
}
