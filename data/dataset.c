/* The dataset interface: generic wrappers over the vtable (range checks,
 * descriptions, a full validation pass) and detection of a data folder's
 * format, so the CLI can take one --data path. */
#include "dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data_util.h"

int rm_dataset_wrap(rm_dataset **out, const rm_dataset_info *info, const rm_dataset_ops *ops, void *ctx, rm_err *e)
{
    *out = NULL;
    rm_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        /* The message first: info->source may live in ctx. */
        rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", info->source ? info->source : "dataset");
        if (ops && ops->destroy) ops->destroy(ctx);
        return RM_ERR_NOMEM;
    }
    ds->info = *info;
    ds->ops = ops;
    ds->ctx = ctx;
    *out = ds;
    return RM_OK;
}

void rm_dataset_free(rm_dataset *ds)
{
    if (!ds) return;
    if (ds->ops && ds->ops->destroy) ds->ops->destroy(ds->ctx);
    free(ds);
}

size_t rm_dataset_label_count(const rm_dataset *ds)
{
    return ds->info.task == RM_TASK_SEGMENTATION ? (size_t)ds->info.h * (size_t)ds->info.w : 1;
}

size_t rm_dataset_image_numel(const rm_dataset *ds)
{
    return (size_t)ds->info.c * (size_t)ds->info.h * (size_t)ds->info.w;
}

int rm_dataset_load(rm_dataset *ds, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    if (!image || !labels)
        return rm_errorf(e, RM_ERR_INVALID, "%s: load needs image and label buffers", ds->info.source);
    if (index < 0 || index >= ds->info.count)
        return rm_errorf(e, RM_ERR_INVALID, "%s: sample %lld out of range [0, %lld)", ds->info.source, (long long)index,
                         (long long)ds->info.count);
    return ds->ops->load(ds->ctx, image, labels, index, e);
}

const char *rm_dataset_class_name(const rm_dataset *ds, int k, char *buf, size_t len)
{
    if (k >= 0 && k < ds->info.classes && ds->ops->class_name) {
        const char *name = ds->ops->class_name(ds->ctx, k);
        if (name) return name;
    }
    snprintf(buf, len, "%d", k);
    return buf;
}

const char *rm_dataset_describe(const rm_dataset *ds, char *buf, size_t len)
{
    const rm_dataset_info *i = &ds->info;
    snprintf(buf, len, "%s %s: %lld samples, %dx%dx%d, %d classes, %s", i->kind, i->source, (long long)i->count, i->c,
             i->h, i->w, i->classes, i->task == RM_TASK_SEGMENTATION ? "segmentation" : "classification");
    return buf;
}

int rm_dataset_validate(rm_dataset *ds, rm_err *e)
{
    float *image = malloc(rm_dataset_image_numel(ds) * sizeof *image);
    int32_t *labels = malloc(rm_dataset_label_count(ds) * sizeof *labels);
    int rc = RM_OK;
    if (!image || !labels) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", ds->info.source);
    for (int64_t i = 0; !rc && i < ds->info.count; i++) {
        rc = rm_dataset_load(ds, image, labels, i, e);
        /* Loaders check labels themselves; this catches a broken adapter. */
        for (size_t j = 0; !rc && j < rm_dataset_label_count(ds); j++)
            if (labels[j] < 0 || labels[j] >= ds->info.classes)
                rc = rm_errorf(e, RM_ERR_INVALID, "%s: sample %lld has label %d outside [0, %d)", ds->info.source,
                               (long long)i, (int)labels[j], ds->info.classes);
    }
    free(image);
    free(labels);
    return rc;
}

/* dir/<name> exists as a regular file. */
static int has_file(const char *dir, const char *name)
{
    char *p = data_path_join(dir, name);
    int64_t size;
    int yes = p && data_file_size(&size, p, NULL) == RM_OK;
    free(p);
    return yes;
}

static int has_dir(const char *dir, const char *name)
{
    char *p = data_path_join(dir, name);
    int yes = p && data_is_dir(p);
    free(p);
    return yes;
}

/* dir has exactly one visible sub-folder. */
static int only_subfolder(const char *dir)
{
    char **names;
    int n;
    if (data_list_dir(&names, &n, dir, 1, NULL) != RM_OK) return 0;
    data_free_names(names, n);
    return n == 1;
}

int rm_dataset_open_dir(rm_dataset **out, const char *dir, rm_split split, const rm_image_options *img, int classes,
                        rm_err *e)
{
    *out = NULL;
    if (!data_is_dir(dir)) {
        struct stat st;
        if (stat(dir, &st) != 0) return rm_errorf(e, RM_ERR_IO, "%s: %s", dir, strerror(errno));
        return rm_errorf(e, RM_ERR_IO, "%s: not a folder", dir);
    }
    if (has_file(dir, "train-images-idx3-ubyte") || has_file(dir, "train-images.idx3-ubyte") ||
        has_file(dir, "t10k-images-idx3-ubyte") || has_file(dir, "t10k-images.idx3-ubyte"))
        return rm_dataset_mnist_open_dir(out, dir, split, e);
    if (has_file(dir, "data_batch_1.bin") || has_file(dir, "test_batch.bin") || has_dir(dir, "cifar-10-batches-bin"))
        return rm_dataset_cifar10_open_dir(out, dir, split, e);

    /* Image data: use the split's sub-folder when there is one. */
    const char *sub = NULL;
    if (split == RM_SPLIT_TRAIN && has_dir(dir, "train")) sub = "train";
    if (split == RM_SPLIT_TEST) sub = has_dir(dir, "val") ? "val" : has_dir(dir, "test") ? "test" : NULL;
    if (split == RM_SPLIT_TEST && !sub && (has_dir(dir, "train")))
        return rm_errorf(e, RM_ERR_IO, "%s: has train/ but no val/ or test/ folder for the test split", dir);
    char *root = sub ? data_path_join(dir, sub) : strdup(dir);
    if (!root) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
    if (!img) {
        free(root);
        return rm_errorf(e, RM_ERR_INVALID, "%s: image data needs the model's input size", dir);
    }
    int rc;
    if (has_dir(root, "images") && has_dir(root, "masks"))
        rc = rm_dataset_segmentation_open(out, root, classes, img, e);
    else if (has_dir(root, "images") && only_subfolder(root))
        /* Segmentation images without their masks (an unlabelled test set),
         * not an image folder of one class named "images": refused with a
         * message that says so, as an I/O error, which makes a trainer note
         * the missing held-out split rather than fail. */
        rc = rm_errorf(e, RM_ERR_IO, "%s: images/ but no masks/, so no labels: unlabelled images are not used", root);
    else if (split == RM_SPLIT_TEST && sub && has_dir(dir, "train")) {
        /* Class ids come from folder names: numbered on their own, a val/
         * lacking one class would shift every later label by one. */
        char *train = data_path_join(dir, "train");
        rc = train ? data_image_folder_open_as(out, root, train, img, e)
                   : rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
        free(train);
    } else
        rc = rm_dataset_image_folder_open(out, root, img, e);
    free(root);
    return rc;
}
