/* Segmentation pairs: root/images/<name>.<ext> and root/masks/<name>.<ext>,
 * matched by name without extension (photos are often JPEG, masks PNG). A
 * mask is a single-channel image whose pixel values are class ids; it must
 * have its image's size, and goes through the same crop as the image with
 * nearest-neighbour sampling (interpolating class ids would invent classes).
 * Headers are all checked at open; mask values when a sample is loaded (or by
 * rm_dataset_validate), because checking them means decoding every mask. */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"

typedef struct seg_sample {
    char *image_path, *mask_path;
    data_image_header image_hd, mask_hd;
} seg_sample;

typedef struct segmentation {
    rm_image_options o;
    int classes;
    seg_sample *samples;
    int64_t count;
    unsigned char *filebuf; /* the largest image or mask file */
    size_t filecap;
    data_resampler rs;
    char *source;
} segmentation;

/* Class ids of the mask (w x h, 8 or 16 bits) at the resampler's nearest
 * positions, after checking every pixel, not only the cropped ones: whether a
 * bad mask is reported must not depend on the input size. */
static int mask_to_labels(segmentation *s, int32_t *labels, const void *px, const seg_sample *sm, rm_err *e)
{
    const int w = sm->mask_hd.w, h = sm->mask_hd.h, is16 = sm->mask_hd.is16;
    const uint8_t *p8 = px;
    const uint16_t *p16 = px;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            unsigned v = is16 ? p16[i] : p8[i];
            if (v >= (unsigned)s->classes)
                return rm_errorf(e, RM_ERR_PARSE, "%s: pixel (x %d, y %d) has value %u, not a class id in [0, %d)",
                                 sm->mask_path, x, y, v, s->classes);
        }
    data_resample_nearest_map(&s->rs, w, h);
    for (int oy = 0; oy < s->o.h; oy++)
        for (int ox = 0; ox < s->o.w; ox++) {
            size_t i = (size_t)s->rs.nn_y[oy] * (size_t)w + (size_t)s->rs.nn_x[ox];
            labels[(size_t)oy * (size_t)s->o.w + (size_t)ox] = is16 ? p16[i] : p8[i];
        }
    return RM_OK;
}

static int seg_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    segmentation *s = ctx;
    const seg_sample *sm = &s->samples[index];
    void *px = NULL;
    int rc = data_read_whole(s->filebuf, s->filecap, sm->image_hd.file_size, sm->image_path, e);
    if (!rc)
        rc = data_image_decode(&px, s->filebuf, (size_t)sm->image_hd.file_size, s->o.c, 0, &sm->image_hd,
                               s->o.max_pixels, sm->image_path, e);
    if (rc) return rc;
    data_resample_bilinear(&s->rs, image, px, sm->image_hd.w, sm->image_hd.h, s->o.mean, s->o.std);
    data_image_release(px);

    rc = data_read_whole(s->filebuf, s->filecap, sm->mask_hd.file_size, sm->mask_path, e);
    if (!rc)
        rc = data_image_decode(&px, s->filebuf, (size_t)sm->mask_hd.file_size, 1, sm->mask_hd.is16, &sm->mask_hd,
                               s->o.max_pixels, sm->mask_path, e);
    if (rc) return rc;
    rc = mask_to_labels(s, labels, px, sm, e);
    data_image_release(px);
    return rc;
}

static void seg_destroy(void *ctx)
{
    segmentation *s = ctx;
    if (!s) return;
    for (int64_t i = 0; i < s->count; i++) free(s->samples[i].image_path), free(s->samples[i].mask_path);
    free(s->samples);
    free(s->filebuf);
    data_resampler_destroy(&s->rs);
    free(s->source);
    free(s);
}

static const rm_dataset_ops seg_ops = {seg_load, NULL, seg_destroy};

/* A file name split at its last dot; the stem orders and matches files. */
typedef struct named {
    const char *name;
    size_t stem;
} named;

static int cmp_stem(const void *pa, const void *pb)
{
    const named *a = pa, *b = pb;
    size_t n = a->stem < b->stem ? a->stem : b->stem;
    int c = memcmp(a->name, b->name, n);
    if (c) return c;
    if (a->stem != b->stem) return a->stem < b->stem ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int same_stem(const named *a, const named *b)
{
    return a->stem == b->stem && memcmp(a->name, b->name, a->stem) == 0;
}

/* The image files of dir as stems, sorted, with duplicated stems refused. */
static int list_stems(named **out, int *count, char ***names, int *nnames, const char *dir, rm_err *e)
{
    *out = NULL;
    *count = 0;
    int rc = data_list_dir(names, nnames, dir, 0, e);
    if (rc) return rc;
    named *list = malloc(((size_t)*nnames + 1) * sizeof *list);
    if (!list) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
    int n = 0;
    for (int i = 0; i < *nnames; i++) {
        const char *name = (*names)[i];
        if (!data_is_image_name(name)) continue;
        list[n].name = name;
        list[n].stem = (size_t)(strrchr(name, '.') - name);
        n++;
    }
    qsort(list, (size_t)n, sizeof *list, cmp_stem);
    for (int i = 1; i < n; i++)
        if (same_stem(&list[i - 1], &list[i])) {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s: %s and %s have the same name; pairs are matched by name", dir,
                           list[i - 1].name, list[i].name);
            free(list);
            return rc;
        }
    *out = list;
    *count = n;
    return RM_OK;
}

static int add_pair(segmentation *s, const char *image_dir, const char *mask_dir, const named *im, const named *mk,
                    rm_err *e)
{
    seg_sample *sm = &s->samples[s->count];
    memset(sm, 0, sizeof *sm);
    sm->image_path = data_path_join(image_dir, im->name);
    sm->mask_path = data_path_join(mask_dir, mk->name);
    s->count++; /* owned from here, freed by seg_destroy */
    if (!sm->image_path || !sm->mask_path) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", image_dir);
    if (data_is_lossy_name(mk->name))
        return rm_errorf(e, RM_ERR_PARSE, "%s: masks must be lossless grayscale PNG; JPEG alters class ids",
                         sm->mask_path);
    int rc = data_image_probe(&sm->image_hd, sm->image_path, s->o.max_pixels, e);
    if (!rc) rc = data_image_probe(&sm->mask_hd, sm->mask_path, s->o.max_pixels, e);
    if (rc) return rc;
    if (sm->mask_hd.comp != 1)
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s: mask has %d channels; a mask must be single-channel grayscale whose values are class "
                         "ids (palette and RGB masks are not supported)",
                         sm->mask_path, sm->mask_hd.comp);
    if (sm->mask_hd.w != sm->image_hd.w || sm->mask_hd.h != sm->image_hd.h)
        return rm_errorf(e, RM_ERR_PARSE, "%s: mask is %dx%d but its image %s is %dx%d", sm->mask_path, sm->mask_hd.w,
                         sm->mask_hd.h, sm->image_path, sm->image_hd.w, sm->image_hd.h);
    return RM_OK;
}

static int pair_up(segmentation *s, const char *image_dir, const char *mask_dir, rm_err *e)
{
    named *ims = NULL, *mks = NULL;
    char **im_names = NULL, **mk_names = NULL;
    int nim = 0, nmk = 0, nim_names = 0, nmk_names = 0;
    int rc = list_stems(&ims, &nim, &im_names, &nim_names, image_dir, e);
    if (!rc) rc = list_stems(&mks, &nmk, &mk_names, &nmk_names, mask_dir, e);
    if (!rc && nim == 0) rc = rm_errorf(e, RM_ERR_IO, "%s: no images (.png .jpg .jpeg .bmp)", image_dir);
    if (!rc && !(s->samples = calloc((size_t)nim, sizeof *s->samples)))
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", image_dir);
    int i = 0, j = 0;
    while (!rc && (i < nim || j < nmk)) {
        int c = i == nim ? 1 : j == nmk ? -1 : cmp_stem(&ims[i], &mks[j]);
        if (i < nim && j < nmk && same_stem(&ims[i], &mks[j])) {
            rc = add_pair(s, image_dir, mask_dir, &ims[i++], &mks[j++], e);
        } else if (c < 0) {
            rc = rm_errorf(e, RM_ERR_IO, "%s/%s: no mask of the same name in %s", image_dir, ims[i].name, mask_dir);
        } else {
            rc = rm_errorf(e, RM_ERR_IO, "%s/%s: no image of the same name in %s", mask_dir, mks[j].name, image_dir);
        }
    }
    free(ims), free(mks);
    data_free_names(im_names, nim_names);
    data_free_names(mk_names, nmk_names);
    return rc;
}

int rm_dataset_segmentation_open(rm_dataset **out, const char *root, int classes, const rm_image_options *o, rm_err *e)
{
    *out = NULL;
    if (classes < 2 || classes > 65536)
        return rm_errorf(e, RM_ERR_INVALID, "%s: %d classes; segmentation needs 2 to 65536", root, classes);
    segmentation *s = calloc(1, sizeof *s);
    if (!s) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", root);
    s->classes = classes;
    char *image_dir = data_path_join(root, "images"), *mask_dir = data_path_join(root, "masks");
    int rc = data_image_options_resolve(&s->o, o, root, e);
    if (!rc && (!image_dir || !mask_dir)) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", root);
    if (!rc) rc = pair_up(s, image_dir, mask_dir, e);
    int max_w = 1, max_h = 1;
    for (int64_t i = 0; !rc && i < s->count; i++) {
        const seg_sample *sm = &s->samples[i];
        if ((size_t)sm->image_hd.file_size > s->filecap) s->filecap = (size_t)sm->image_hd.file_size;
        if ((size_t)sm->mask_hd.file_size > s->filecap) s->filecap = (size_t)sm->mask_hd.file_size;
        if (sm->image_hd.w > max_w) max_w = sm->image_hd.w;
        if (sm->image_hd.h > max_h) max_h = sm->image_hd.h;
    }
    if (!rc && !(s->filebuf = malloc(s->filecap)))
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for a %zu-byte file buffer", root, s->filecap);
    if (!rc) rc = data_resampler_init(&s->rs, max_w, max_h, s->o.w, s->o.h, s->o.c, e);
    if (!rc && !(s->source = strdup(root))) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", root);
    free(image_dir);
    free(mask_dir);
    if (rc) {
        seg_destroy(s);
        return rc;
    }
    rm_dataset_info info = {s->count, s->o.c, s->o.h, s->o.w, classes, RM_TASK_SEGMENTATION, "segmentation", s->source};
    return rm_dataset_wrap(out, &info, &seg_ops, s, e);
}
