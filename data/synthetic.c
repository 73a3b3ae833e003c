/* Synthetic datasets for tests, demos and benchmarks: learnable, seeded and
 * of any shape, so training can be exercised without downloading anything.
 * Each class owns a prototype pattern: two oriented sinusoidal gratings shared
 * by its channels, with a per-channel phase, amplitude and offset (colour).
 * Gratings rather than per-pixel noise prototypes because convolutions with
 * pooling pick up local frequency and orientation, so a tiny CNN learns the
 * task; the per-channel offsets make even a linear model better than chance.
 * Samples are computed on the fly from (seed, index): nothing is stored but
 * the prototypes' few parameters, so a million 224x224 samples cost nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "rng.h"

#define PI 3.14159265358979323846

typedef struct proto {
    float kx[2], ky[2]; /* radians per pixel of each grating */
} proto;

typedef struct proto_channel {
    float phase[2], amp[2], offset;
} proto_channel;

typedef struct synth {
    rm_synthetic_options o;
    proto *protos;       /* classes */
    proto_channel *chan; /* classes x c */
    float *table;        /* classes x c x h x w prototype values when small enough, else NULL */
    char source[128];
} synth;

/* Prototypes are tabulated when they fit in 64 MB: two sinf per pixel
 * would otherwise dominate the cost of a sample. */
#define SYNTH_TABLE_MAX ((size_t)1 << 24)

void rm_synthetic_options_default(rm_synthetic_options *o, rm_task task, int64_t count, int c, int h, int w,
                                  int classes)
{
    memset(o, 0, sizeof *o);
    o->task = task;
    o->count = count;
    o->c = c, o->h = h, o->w = w;
    o->classes = classes;
    o->seed = 1;
    o->noise = 0.5f;
}

static float proto_compute(const synth *s, int k, int ch, int y, int x)
{
    const proto *p = &s->protos[k];
    const proto_channel *q = &s->chan[(size_t)k * (size_t)s->o.c + (size_t)ch];
    return q->offset + q->amp[0] * sinf(p->kx[0] * (float)x + p->ky[0] * (float)y + q->phase[0]) +
           q->amp[1] * sinf(p->kx[1] * (float)x + p->ky[1] * (float)y + q->phase[1]);
}

static float proto_value(const synth *s, int k, int ch, int y, int x)
{
    if (s->table)
        return s->table[(((size_t)k * (size_t)s->o.c + (size_t)ch) * (size_t)s->o.h + (size_t)y) * (size_t)s->o.w +
                        (size_t)x];
    return proto_compute(s, k, ch, y, x);
}

/* Approximately standard normal noise for element i of a sample: the sum of
 * four 16-bit uniforms from one hash, centred and scaled to unit variance
 * (Irwin-Hall). One hash per value instead of Box-Muller's log, sqrt and cos
 * makes a 3x224x224 sample several times cheaper; the bounded tails (+-3.46)
 * do not matter for a learnable toy task. */
static float noise_at(uint64_t key, size_t i)
{
    uint64_t h = rm_hash64(key ^ (uint64_t)i);
    uint32_t sum =
        (uint32_t)(h & 0xffff) + (uint32_t)(h >> 16 & 0xffff) + (uint32_t)(h >> 32 & 0xffff) + (uint32_t)(h >> 48);
    return ((float)sum * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

/* The stream of sample `index`, independent of every other sample's. */
static rm_rng sample_rng(const synth *s, int64_t index)
{
    return rm_rng_make(rm_hash64(s->o.seed ^ 0x73616d706c65ULL) ^ rm_hash64((uint64_t)index));
}

static void paint_image(const synth *s, float *image, const int32_t *mask, int32_t label, rm_rng *r)
{
    const int c = s->o.c, h = s->o.h, w = s->o.w;
    uint64_t key = rm_rng_next(r);
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int k = mask ? mask[(size_t)y * (size_t)w + (size_t)x] : label;
                size_t i = ((size_t)ch * (size_t)h + (size_t)y) * (size_t)w + (size_t)x;
                float v = proto_value(s, k, ch, y, x);
                if (s->o.noise > 0) v += s->o.noise * noise_at(key, i);
                image[i] = v;
            }
}

/* 1-4 rectangles and discs of classes 1..K-1 on a class-0 background; later
 * shapes cover earlier ones, and the mask records what is visible. */
static void paint_mask(const synth *s, int32_t *mask, rm_rng *r)
{
    const int h = s->o.h, w = s->o.w, k = s->o.classes;
    for (size_t i = 0; i < (size_t)h * (size_t)w; i++) mask[i] = 0;
    double side = h < w ? h : w;
    int shapes = 1 + (int)(rm_rng_next(r) % 4);
    for (int sh = 0; sh < shapes; sh++) {
        int32_t cls = 1 + (int32_t)(rm_rng_next(r) % (uint64_t)(k - 1));
        int disc = (int)(rm_rng_next(r) & 1);
        double cy = rm_rng_range(r, 0, h), cx = rm_rng_range(r, 0, w);
        double ry = side * rm_rng_range(r, 0.125, 0.375), rx = disc ? ry : side * rm_rng_range(r, 0.125, 0.375);
        if (ry < 0.5) ry = 0.5;
        if (rx < 0.5) rx = 0.5;
        int y0 = (int)floor(cy - ry), y1 = (int)ceil(cy + ry), x0 = (int)floor(cx - rx), x1 = (int)ceil(cx + rx);
        if (y0 < 0) y0 = 0;
        if (x0 < 0) x0 = 0;
        if (y1 > h) y1 = h;
        if (x1 > w) x1 = w;
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++) {
                double dy = (y + 0.5 - cy) / ry, dx = (x + 0.5 - cx) / rx;
                int in = disc ? dy * dy + dx * dx < 1 : fabs(dy) < 1 && fabs(dx) < 1;
                if (in) mask[(size_t)y * (size_t)w + (size_t)x] = cls;
            }
    }
}

static int synth_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    (void)e;
    const synth *s = ctx;
    rm_rng r = sample_rng(s, index);
    if (s->o.task == RM_TASK_SEGMENTATION) {
        paint_mask(s, labels, &r);
        paint_image(s, image, labels, 0, &r);
    } else {
        labels[0] = (int32_t)(rm_rng_next(&r) % (uint64_t)s->o.classes);
        paint_image(s, image, NULL, labels[0], &r);
    }
    return RM_OK;
}

static void synth_destroy(void *ctx)
{
    synth *s = ctx;
    if (!s) return;
    free(s->protos);
    free(s->chan);
    free(s->table);
    free(s);
}

static const rm_dataset_ops synth_ops = {synth_load, NULL, synth_destroy};

int rm_dataset_synthetic_create(rm_dataset **out, const rm_synthetic_options *o, rm_err *e)
{
    *out = NULL;
    if (o->task != RM_TASK_CLASSIFICATION && o->task != RM_TASK_SEGMENTATION)
        return rm_errorf(e, RM_ERR_INVALID, "synthetic data: unknown task %d", (int)o->task);
    if (o->count < 1)
        return rm_errorf(e, RM_ERR_INVALID, "synthetic data: count %lld must be positive", (long long)o->count);
    if (o->c < 1 || o->h < 1 || o->w < 1 || (int64_t)o->c * o->h * o->w > (1LL << 28))
        return rm_errorf(e, RM_ERR_INVALID, "synthetic data: input %dx%dx%d must be positive and at most 2^28 values",
                         o->c, o->h, o->w);
    if (o->classes < 2 || o->classes > (1 << 20))
        return rm_errorf(e, RM_ERR_INVALID, "synthetic data: %d classes; need 2 to 2^20", o->classes);
    if (!(o->noise >= 0) || !isfinite(o->noise))
        return rm_errorf(e, RM_ERR_INVALID, "synthetic data: noise %g must be finite and >= 0", (double)o->noise);

    synth *s = calloc(1, sizeof *s);
    if (!s) return rm_errorf(e, RM_ERR_NOMEM, "synthetic data: out of memory");
    s->o = *o;
    s->protos = malloc((size_t)o->classes * sizeof *s->protos);
    s->chan = malloc((size_t)o->classes * (size_t)o->c * sizeof *s->chan);
    if (!s->protos || !s->chan) {
        synth_destroy(s);
        return rm_errorf(e, RM_ERR_NOMEM, "synthetic data: out of memory for %d classes", o->classes);
    }
    /* Segmentation classes must be told apart pixel by pixel, so colour
     * dominates there; classification images are told apart by pattern. */
    int seg = o->task == RM_TASK_SEGMENTATION;
    double off = seg ? 1.0 : 0.5, amp_lo = seg ? 0.05 : 0.3, amp_hi = seg ? 0.15 : 0.7;
    rm_rng r = rm_rng_make(rm_hash64(o->seed ^ 0x70726f746fULL));
    for (int k = 0; k < o->classes; k++) {
        for (int g = 0; g < 2; g++) {
            /* 1 to 4 cycles across the image at any orientation. */
            double theta = rm_rng_range(&r, 0, PI), f = rm_rng_range(&r, 1, 4);
            s->protos[k].kx[g] = (float)(2 * PI * f * cos(theta) / o->w);
            s->protos[k].ky[g] = (float)(2 * PI * f * sin(theta) / o->h);
        }
        for (int ch = 0; ch < o->c; ch++) {
            proto_channel *q = &s->chan[(size_t)k * (size_t)o->c + (size_t)ch];
            for (int g = 0; g < 2; g++) {
                q->phase[g] = (float)rm_rng_range(&r, 0, 2 * PI);
                q->amp[g] = (float)rm_rng_range(&r, amp_lo, amp_hi);
            }
            q->offset = (float)rm_rng_range(&r, -off, off);
        }
    }
    if (seg) {
        /* Random offsets can put two classes' colours side by side; for
         * segmentation each channel instead spreads the classes evenly over
         * [-1, 1] in its own random order, so any two classes differ by at
         * least 2/K in every channel. */
        int *perm = malloc((size_t)o->classes * sizeof *perm);
        if (!perm) {
            synth_destroy(s);
            return rm_errorf(e, RM_ERR_NOMEM, "synthetic data: out of memory for %d classes", o->classes);
        }
        for (int ch = 0; ch < o->c; ch++) {
            for (int k = 0; k < o->classes; k++) perm[k] = k;
            for (int k = o->classes - 1; k > 0; k--) {
                int j = (int)(rm_rng_next(&r) % (uint64_t)(k + 1)), t = perm[k];
                perm[k] = perm[j], perm[j] = t;
            }
            for (int k = 0; k < o->classes; k++)
                s->chan[(size_t)k * (size_t)o->c + (size_t)ch].offset =
                    (float)(-off + 2 * off * (perm[k] + 0.5) / o->classes);
        }
        free(perm);
    }
    size_t table_n = (size_t)o->classes * (size_t)o->c * (size_t)o->h * (size_t)o->w;
    if (table_n <= SYNTH_TABLE_MAX && (s->table = malloc(table_n * sizeof *s->table)) != NULL) {
        /* Filled through proto_compute, so both paths give the same values. */
        size_t i = 0;
        for (int k = 0; k < o->classes; k++)
            for (int ch = 0; ch < o->c; ch++)
                for (int y = 0; y < o->h; y++)
                    for (int x = 0; x < o->w; x++) s->table[i++] = proto_compute(s, k, ch, y, x);
    }
    snprintf(s->source, sizeof s->source, "synthetic %s (seed %llu, noise %g)", seg ? "segmentation" : "classification",
             (unsigned long long)o->seed, (double)o->noise);
    rm_dataset_info info = {o->count, o->c, o->h, o->w, o->classes, o->task, "synthetic", s->source};
    return rm_dataset_wrap(out, &info, &synth_ops, s, e);
}
