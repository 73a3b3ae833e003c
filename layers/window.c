/* Sliding-window geometry shared by the pooling layers. */
#include "window.h"

int rm_window_square(const char *layer, const rm_layer_config *cfg, rm_err *e)
{
    const struct {
        const char *what;
        rm_hw v;
    } axes[] = {{"kernel", cfg->kernel}, {"stride", cfg->stride}, {"pad", cfg->pad}};
    for (int i = 0; i < 3; i++)
        if (axes[i].v.h != axes[i].v.w)
            return rm_errorf(e, RM_ERR_SHAPE, "%s: %s %dx%d differs between height and width; %s's are square", layer,
                             axes[i].what, axes[i].v.h, axes[i].v.w, layer);
    return RM_OK;
}

int rm_window_infer(rm_shape *out, const char *layer, const rm_layer_config *cfg, const rm_shape *in, int nin,
                    rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: takes exactly 1 input, got %d", layer, nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: empty input %s", layer, rm_shape_str(x, buf, sizeof buf));
    int rc = rm_window_square(layer, cfg, e);
    if (rc) return rc;
    if (cfg->kernel.h < 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: kernel must be >= 1, got %d", layer, cfg->kernel.h);
    if (cfg->stride.h < 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: stride must be >= 1, got %d", layer, cfg->stride.h);
    /* PyTorch's rule: a window of nothing but padding would be meaningless. */
    if (cfg->pad.h < 0 || cfg->pad.h > cfg->kernel.h / 2)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: pad must be in [0, kernel/2] = [0, %d], got %d", layer,
                         cfg->kernel.h / 2, cfg->pad.h);
    long long ph = (long long)x.h + 2LL * cfg->pad.h, pw = (long long)x.w + 2LL * cfg->pad.h;
    if (ph < cfg->kernel.h || pw < cfg->kernel.h)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: kernel %d is larger than the padded input %lldx%lld (input %s, pad %d)",
                         layer, cfg->kernel.h, ph, pw, rm_shape_str(x, buf, sizeof buf), cfg->pad.h);
    const long long k = cfg->kernel.h, s = cfg->stride.h, up = cfg->ceil_mode ? s - 1 : 0;
    long long ho = (ph - k + up) / s + 1, wo = (pw - k + up) / s + 1;
    if (cfg->ceil_mode && (ho - 1) * s >= x.h + cfg->pad.h) ho--;
    if (cfg->ceil_mode && (wo - 1) * s >= x.w + cfg->pad.h) wo--;
    *out = rm_shape_make(x.n, x.c, (int)ho, (int)wo);
    return RM_OK;
}
