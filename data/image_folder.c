/* Image folders (the ImageNet / torchvision ImageFolder layout): one
 * sub-folder per class, sorted by name, holding that class's images. Every
 * image header is read at open: a corrupt or oversized file fails before
 * training starts, and the largest file and image sizes size the buffers, so
 * loading never allocates outside stb_image's decoder. */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"

typedef struct folder_sample {
    char *path;
    int32_t label;
    data_image_header hd;
} folder_sample;

typedef struct image_folder {
    rm_image_options o;
    folder_sample *samples;
    int64_t count, cap;
    char **class_names;
    int classes;
    unsigned char *filebuf; /* the largest file */
    size_t filecap;
    data_resampler rs;
    char *source;
} image_folder;

static int folder_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    image_folder *f = ctx;
    const folder_sample *s = &f->samples[index];
    int rc = data_read_whole(f->filebuf, f->filecap, s->hd.file_size, s->path, e);
    void *px = NULL;
    if (!rc)
        rc =
            data_image_decode(&px, f->filebuf, (size_t)s->hd.file_size, f->o.c, 0, &s->hd, f->o.max_pixels, s->path, e);
    if (rc) return rc;
    data_resample_bilinear(&f->rs, image, px, s->hd.w, s->hd.h, f->o.mean, f->o.std);
    data_image_release(px);
    labels[0] = s->label;
    return RM_OK;
}

static const char *folder_class_name(void *ctx, int k)
{
    return ((image_folder *)ctx)->class_names[k];
}

static void folder_destroy(void *ctx)
{
    image_folder *f = ctx;
    if (!f) return;
    for (int64_t i = 0; i < f->count; i++) free(f->samples[i].path);
    free(f->samples);
    data_free_names(f->class_names, f->classes);
    free(f->filebuf);
    data_resampler_destroy(&f->rs);
    free(f->source);
    free(f);
}

static const rm_dataset_ops folder_ops = {folder_load, folder_class_name, folder_destroy};

/* Adds the images of one class folder; path ownership passes to f. */
static int add_class(image_folder *f, const char *dir, int32_t label, rm_err *e)
{
    char **names;
    int n;
    int rc = data_list_dir(&names, &n, dir, 0, e);
    if (rc) return rc;
    int64_t before = f->count;
    for (int i = 0; i < n && !rc; i++) {
        /* Only image extensions: README files, checksums and the like that
         * often sit next to data are not samples. */
        if (!data_is_image_name(names[i])) continue;
        if (f->count == f->cap) {
            int64_t ncap = f->cap ? 2 * f->cap : 256;
            folder_sample *grown = realloc(f->samples, (size_t)ncap * sizeof *grown);
            if (!grown) {
                rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
                break;
            }
            f->samples = grown;
            f->cap = ncap;
        }
        folder_sample *s = &f->samples[f->count];
        s->label = label;
        s->path = data_path_join(dir, names[i]);
        if (!s->path) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
            break;
        }
        f->count++;
        rc = data_image_probe(&s->hd, s->path, f->o.max_pixels, e);
    }
    data_free_names(names, n);
    if (!rc && f->count == before)
        rc = rm_errorf(e, RM_ERR_IO, "%s: class folder has no images (.png .jpg .jpeg .bmp)", dir);
    return rc;
}

/* A folder without class sub-folders. When it holds images itself (an
 * unlabelled test set, as ImageNet's and Kaggle's are) the message says they
 * have no labels, so the note a trainer prints when it falls back to a split
 * of the training data says why these images were not used. */
static int no_classes_error(const char *root, rm_err *e)
{
    char **names;
    int n, images = 0;
    int rc = data_list_dir(&names, &n, root, 0, e);
    if (rc) return rc;
    for (int i = 0; i < n; i++) images += data_is_image_name(names[i]);
    data_free_names(names, n);
    if (images)
        return rm_errorf(e, RM_ERR_IO,
                         "%s: %d image%s but no class sub-folders, so no labels: unlabelled images are not used", root,
                         images, images == 1 ? "" : "s");
    return rm_errorf(e, RM_ERR_IO, "%s: no class sub-folders", root);
}

/* The class sub-folders of root must all be classes of class_root's: a
 * held-out class the model was never trained on has no label. */
static int check_known_classes(const image_folder *f, const char *root, const char *class_root, rm_err *e)
{
    char **names;
    int n;
    int rc = data_list_dir(&names, &n, root, 1, e);
    if (rc) return rc;
    if (n == 0) rc = no_classes_error(root, e);
    for (int i = 0; !rc && i < n; i++) {
        int known = 0;
        for (int k = 0; k < f->classes && !known; k++) known = strcmp(names[i], f->class_names[k]) == 0;
        if (!known)
            rc = rm_errorf(e, RM_ERR_PARSE, "%s/%s: not a class of the training data (%s has no folder %s)", root,
                           names[i], class_root, names[i]);
    }
    data_free_names(names, n);
    return rc;
}

int data_image_folder_open_as(rm_dataset **out, const char *root, const char *class_root, const rm_image_options *o,
                              rm_err *e)
{
    *out = NULL;
    image_folder *f = calloc(1, sizeof *f);
    if (!f) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", root);
    const char *classes_from = class_root ? class_root : root;
    int rc = data_image_options_resolve(&f->o, o, root, e);
    if (!rc) rc = data_list_dir(&f->class_names, &f->classes, classes_from, 1, e);
    if (!rc && f->classes == 0) rc = no_classes_error(classes_from, e);
    if (!rc && class_root) rc = check_known_classes(f, root, class_root, e);
    for (int k = 0; !rc && k < f->classes; k++) {
        char *dir = data_path_join(root, f->class_names[k]);
        if (!dir) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", root);
        /* A held-out split need not have every class. */
        else if (!class_root || data_is_dir(dir))
            rc = add_class(f, dir, k, e);
        free(dir);
    }
    int max_w = 1, max_h = 1;
    for (int64_t i = 0; !rc && i < f->count; i++) {
        const data_image_header *hd = &f->samples[i].hd;
        if ((size_t)hd->file_size > f->filecap) f->filecap = (size_t)hd->file_size;
        if (hd->w > max_w) max_w = hd->w;
        if (hd->h > max_h) max_h = hd->h;
    }
    if (!rc && !(f->filebuf = malloc(f->filecap)))
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for a %zu-byte file buffer", root, f->filecap);
    if (!rc) rc = data_resampler_init(&f->rs, max_w, max_h, f->o.w, f->o.h, f->o.c, e);
    if (!rc && !(f->source = strdup(root))) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", root);
    if (rc) {
        folder_destroy(f);
        return rc;
    }
    rm_dataset_info info = {f->count,       f->o.c,   f->o.h, f->o.w, f->classes, RM_TASK_CLASSIFICATION,
                            "image-folder", f->source};
    return rm_dataset_wrap(out, &info, &folder_ops, f, e);
}

int rm_dataset_image_folder_open(rm_dataset **out, const char *root, const rm_image_options *o, rm_err *e)
{
    return data_image_folder_open_as(out, root, NULL, o, e);
}
