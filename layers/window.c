/* Sliding-window geometry shared by the pooling layers. */
#include "window.h"

int rm_window_infer(rm_shape *out, const char *layer, const rm_layer_config *cfg, const rm_shape *in, int nin,
                    rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: takes exactly 1 input, got %d", layer, nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: empty input %s", layer, rm_shape_str(x, buf, sizeof buf));
    if (cfg->kernel < 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: kernel must be >= 1, got %d", layer, cfg->kernel);
    if (cfg->stride < 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: stride must be >= 1, got %d", layer, cfg->stride);
    /* PyTorch's rule: a window of nothing but padding would be meaningless. */
    if (cfg->pad < 0 || cfg->pad > cfg->kernel / 2)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: pad must be in [0, kernel/2] = [0, %d], got %d", layer, cfg->kernel / 2,
                         cfg->pad);
    long long ph = (long long)x.h + 2LL * cfg->pad, pw = (long long)x.w + 2LL * cfg->pad;
    if (ph < cfg->kernel || pw < cfg->kernel)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: kernel %d is larger than the padded input %lldx%lld (input %s, pad %d)",
                         layer, cfg->kernel, ph, pw, rm_shape_str(x, buf, sizeof buf), cfg->pad);
    const long long k = cfg->kernel, s = cfg->stride, up = cfg->ceil_mode ? s - 1 : 0;
    long long ho = (ph - k + up) / s + 1, wo = (pw - k + up) / s + 1;
    if (cfg->ceil_mode && (ho - 1) * s >= x.h + cfg->pad) ho--;
    if (cfg->ceil_mode && (wo - 1) * s >= x.w + cfg->pad) wo--;
    *out = rm_shape_make(x.n, x.c, (int)ho, (int)wo);
    return RM_OK;
}
