/* Weight initialisation (init.h). */
#include "init.h"

#include <math.h>
#include <string.h>

static const char *const names[RM_INIT_COUNT] = {"kaiming_in", "kaiming_out", "normal_0.01", "pytorch"};

const char *rm_init_name(int init)
{
    return init >= 0 && init < RM_INIT_COUNT ? names[init] : NULL;
}

int rm_init_parse(int *out, const char *s, rm_err *e)
{
    for (int k = 0; k < RM_INIT_COUNT; k++)
        if (!strcmp(s, names[k])) return *out = k, RM_OK;
    return rm_errorf(e, RM_ERR_INVALID, "init must be kaiming_in, kaiming_out, normal_0.01 or pytorch, got '%s'", s);
}

static void fill(rm_tensor *t, int uniform, double scale, rm_rng *rng)
{
    for (size_t i = 0; t->data && i < rm_tensor_numel(t); i++)
        t->data[i] = (float)(uniform ? scale * (2.0 * rm_rng_uniform(rng) - 1.0) : scale * rm_rng_normal(rng));
}

void rm_init_weights(rm_layer_params *p, const rm_layer_config *cfg, double fan_in, double fan_out, rm_rng *rng)
{
    const double bound = 1.0 / sqrt(fan_in);
    switch (cfg->init) {
    case RM_INIT_KAIMING_OUT:
        fill(&p->w, 0, sqrt(2.0 / fan_out), rng);
        break;
    case RM_INIT_NORMAL_001:
        fill(&p->w, 0, 0.01, rng);
        break;
    case RM_INIT_PYTORCH:
        fill(&p->w, 1, bound, rng);
        fill(&p->b, 1, bound, rng);
        return;
    default:
        fill(&p->w, 0, sqrt(2.0 / fan_in), rng);
        break;
    }
    if (p->b.data) memset(p->b.data, 0, rm_tensor_numel(&p->b) * sizeof(float));
}
