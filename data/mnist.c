/* MNIST in its original idx format (also Fashion-MNIST, which shares it):
 * an idx3-ubyte image file and an idx1-ubyte label file, big-endian headers.
 * Both files are checked completely at open (magic, dimensions, exact sizes,
 * matching counts, labels 0-9) and kept in memory (47 MB for the training
 * set), so loading a sample is a table lookup per pixel. */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"

#define MNIST_IMAGES_MAGIC 0x00000803u
#define MNIST_LABELS_MAGIC 0x00000801u

typedef struct mnist {
    int64_t count;
    int rows, cols;
    unsigned char *pixels; /* count x rows x cols */
    unsigned char *labels; /* count */
    float lut[256];        /* pixel byte -> normalized value */
    char *source;
} mnist;

static int mnist_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    (void)e;
    const mnist *m = ctx;
    size_t n = (size_t)m->rows * (size_t)m->cols;
    const unsigned char *p = m->pixels + (size_t)index * n;
    for (size_t i = 0; i < n; i++) image[i] = m->lut[p[i]];
    labels[0] = m->labels[index];
    return RM_OK;
}

static const char *mnist_class_name(void *ctx, int k)
{
    (void)ctx;
    static const char *const digits[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    return digits[k];
}

static void mnist_destroy(void *ctx)
{
    mnist *m = ctx;
    if (!m) return;
    free(m->pixels);
    free(m->labels);
    free(m->source);
    free(m);
}

static const rm_dataset_ops mnist_ops = {mnist_load, mnist_class_name, mnist_destroy};

static const char *size_problem(int64_t size, uint64_t expect)
{
    return (uint64_t)size < expect ? "truncated" : "trailing bytes";
}

/* Opens an idx file and reads its header: the magic (idx1 or idx3, its
 * ndims dimensions), then ndims big-endian counts into dims. The magic alone
 * first, so a label file given as images is reported as such rather than as
 * a short header. On success the caller owns *fp. */
static int read_idx_header(FILE **fp, int64_t *size, uint32_t *dims, int ndims, uint32_t magic, const char *what,
                           const char *path, rm_err *e)
{
    int rc = data_open(fp, size, path, e);
    if (rc) return rc;
    char label[32];
    unsigned char hd[16] = {0};
    snprintf(label, sizeof label, "the idx%d magic", ndims);
    rc = data_read_exact(*fp, hd, 4, path, label, e);
    if (!rc && data_be32(hd) != magic)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s: magic 0x%08x, expected 0x%08x (an idx%d-ubyte %s file)", path,
                       data_be32(hd), magic, ndims, what);
    snprintf(label, sizeof label, "the idx%d header", ndims);
    if (!rc) rc = data_read_exact(*fp, hd + 4, 4 * (size_t)ndims, path, label, e);
    for (int d = 0; d < ndims; d++) dims[d] = data_be32(hd + 4 + 4 * d);
    if (rc) fclose(*fp);
    return rc;
}

/* Reads the whole image file: header, then exactly count*rows*cols bytes. */
static int read_images(mnist *m, uint32_t *count, const char *path, rm_err *e)
{
    FILE *fp;
    int64_t size;
    uint32_t dims[3];
    int rc = read_idx_header(&fp, &size, dims, 3, MNIST_IMAGES_MAGIC, "image", path, e);
    if (rc) return rc;
    uint32_t n = dims[0], rows = dims[1], cols = dims[2];
    if (n == 0 || rows == 0 || cols == 0 || rows > RM_IMAGE_MAX_SIDE || cols > RM_IMAGE_MAX_SIDE)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s: header gives %u images of %ux%u; need a positive count and sides 1-%d",
                       path, n, rows, cols, RM_IMAGE_MAX_SIDE);
    uint64_t body = (uint64_t)n * rows * cols;
    /* The size is checked before allocating, so a corrupt count cannot make
     * us allocate more than the file holds. */
    if (!rc && (uint64_t)size != 16 + body)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s: %lld bytes, expected %llu for %u images of %ux%u (%s)", path,
                       (long long)size, (unsigned long long)(16 + body), n, rows, cols, size_problem(size, 16 + body));
    if (!rc) {
        m->pixels = malloc(body);
        if (!m->pixels)
            rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for %llu bytes", path, (unsigned long long)body);
    }
    if (!rc) rc = data_read_exact(fp, m->pixels, body, path, "the pixels", e);
    fclose(fp);
    if (rc) return rc;
    *count = n;
    m->rows = (int)rows;
    m->cols = (int)cols;
    return RM_OK;
}

static int read_labels(mnist *m, uint32_t *count, const char *path, rm_err *e)
{
    FILE *fp;
    int64_t size;
    uint32_t n;
    int rc = read_idx_header(&fp, &size, &n, 1, MNIST_LABELS_MAGIC, "label", path, e);
    if (rc) return rc;
    if ((uint64_t)size != 8 + (uint64_t)n)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s: %lld bytes, expected %llu for %u labels (%s)", path, (long long)size,
                       (unsigned long long)(8 + (uint64_t)n), n, size_problem(size, 8 + (uint64_t)n));
    if (!rc) {
        m->labels = malloc(n ? n : 1);
        if (!m->labels) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", path);
    }
    if (!rc) rc = data_read_exact(fp, m->labels, n, path, "the labels", e);
    fclose(fp);
    for (uint32_t i = 0; !rc && i < n; i++)
        if (m->labels[i] > 9)
            rc = rm_errorf(e, RM_ERR_PARSE, "%s: label %u of item %u is not a digit 0-9", path, m->labels[i], i);
    if (rc) return rc;
    *count = n;
    return RM_OK;
}

int rm_dataset_mnist_open(rm_dataset **out, const char *images_path, const char *labels_path, rm_err *e)
{
    *out = NULL;
    mnist *m = calloc(1, sizeof *m);
    if (!m) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", images_path);
    uint32_t ni = 0, nl = 0;
    int rc = read_images(m, &ni, images_path, e);
    if (!rc) rc = read_labels(m, &nl, labels_path, e);
    if (!rc && ni != nl)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s: %u images but %s has %u labels", images_path, ni, labels_path, nl);
    if (!rc) {
        m->source = strdup(images_path);
        if (!m->source) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", images_path);
    }
    if (rc) {
        mnist_destroy(m);
        return rc;
    }
    m->count = ni;
    /* Written out so the tests can reproduce every value bit for bit. */
    for (int p = 0; p < 256; p++) m->lut[p] = ((float)p / 255.0f - RM_MNIST_MEAN) / RM_MNIST_STD;
    rm_dataset_info info = {m->count, 1, m->rows, m->cols, 10, RM_TASK_CLASSIFICATION, "mnist", m->source};
    return rm_dataset_wrap(out, &info, &mnist_ops, m, e);
}

int rm_dataset_mnist_open_dir(rm_dataset **out, const char *dir, rm_split split, rm_err *e)
{
    *out = NULL;
    const char *prefix = split == RM_SPLIT_TEST ? "t10k" : "train";
    char name_i[64], name_l[64];
    /* The canonical names, then the dotted spelling some mirrors use. */
    snprintf(name_i, sizeof name_i, "%s-images-idx3-ubyte", prefix);
    snprintf(name_l, sizeof name_l, "%s-labels-idx1-ubyte", prefix);
    char *pi = data_path_join(dir, name_i), *pl = data_path_join(dir, name_l);
    int rc = RM_OK;
    if (!pi || !pl) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
    int64_t size;
    if (!rc && data_file_size(&size, pi, NULL) != RM_OK) {
        char alt_i[64], alt_l[64];
        snprintf(alt_i, sizeof alt_i, "%s-images.idx3-ubyte", prefix);
        snprintf(alt_l, sizeof alt_l, "%s-labels.idx1-ubyte", prefix);
        char *ai = data_path_join(dir, alt_i), *al = data_path_join(dir, alt_l);
        if (ai && al && data_file_size(&size, ai, NULL) == RM_OK) {
            free(pi), free(pl);
            pi = ai, pl = al;
        } else {
            free(ai), free(al);
        }
    }
    if (!rc) rc = rm_dataset_mnist_open(out, pi, pl, e);
    free(pi);
    free(pl);
    return rc;
}
