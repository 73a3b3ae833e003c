/* File and folder helpers for the data loaders: every failure names the path
 * and says what went wrong (missing, not a file, short read, changed size). */
#include "data_util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int data_file_size(int64_t *size, const char *path, rm_err *e)
{
    struct stat st;
    if (stat(path, &st) != 0) return rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return rm_errorf(e, RM_ERR_IO, "%s: not a regular file", path);
    *size = (int64_t)st.st_size;
    return RM_OK;
}

int data_open(FILE **fp, int64_t *size, const char *path, rm_err *e)
{
    int rc = data_file_size(size, path, e);
    if (rc) return rc;
    *fp = fopen(path, "rb");
    if (!*fp) return rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return RM_OK;
}

int data_read_exact(FILE *fp, void *buf, size_t n, const char *path, const char *what, rm_err *e)
{
    size_t got = fread(buf, 1, n, fp);
    if (got != n) {
        if (ferror(fp)) return rm_errorf(e, RM_ERR_IO, "%s: read error in %s: %s", path, what, strerror(errno));
        return rm_errorf(e, RM_ERR_PARSE, "%s: truncated: %s needs %zu bytes, only %zu left", path, what, n, got);
    }
    return RM_OK;
}

int data_read_whole(unsigned char *buf, size_t cap, int64_t expect, const char *path, rm_err *e)
{
    FILE *fp;
    int64_t size;
    int rc = data_open(&fp, &size, path, e);
    if (rc) return rc;
    /* The buffers were sized from the sizes seen at open; a file that grew
     * or shrank since then is reported rather than silently misread. */
    if (size != expect || (uint64_t)size > cap) {
        fclose(fp);
        return rm_errorf(e, RM_ERR_IO, "%s: size changed since the dataset was opened (%lld bytes, was %lld)", path,
                         (long long)size, (long long)expect);
    }
    rc = data_read_exact(fp, buf, (size_t)size, path, "the file", e);
    fclose(fp);
    return rc;
}

int data_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *data_path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int slash = la > 0 && a[la - 1] != '/';
    char *p = malloc(la + (size_t)slash + lb + 1);
    if (!p) return NULL;
    memcpy(p, a, la);
    if (slash) p[la] = '/';
    memcpy(p + la + (size_t)slash, b, lb + 1);
    return p;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void data_free_names(char **names, int count)
{
    if (!names) return;
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
}

int data_list_dir(char ***names, int *count, const char *dir, int want_dirs, rm_err *e)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return rm_errorf(e, RM_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
    char **list = NULL;
    int n = 0, cap = 0, rc = RM_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        /* Hidden entries (., .., .DS_Store, editor files) are never data. */
        if (de->d_name[0] == '.') continue;
        char *full = data_path_join(dir, de->d_name);
        if (!full) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory listing the folder", dir);
            break;
        }
        /* stat, not d_type: some file systems report DT_UNKNOWN, and links
         * to folders or files should count as what they point to. An entry
         * that cannot be inspected (a link whose target is gone, no
         * permission) is an error, not skipped: a training set that quietly
         * loses files is wrong in a way nobody notices. */
        struct stat st;
        if (stat(full, &st) != 0) {
            int err = errno;
            struct stat lst;
            /* RM_ERR_INVALID, not RM_ERR_IO: the folder is there and one of
             * its entries is bad, which a trainer must not mistake for a
             * missing held-out split (RM_ERR_IO) and replace by a part of
             * the training data. */
            if (lstat(full, &lst) == 0 && S_ISLNK(lst.st_mode) && err == ENOENT)
                rc = rm_errorf(e, RM_ERR_INVALID, "%s: broken symbolic link (its target does not exist)", full);
            else
                rc = rm_errorf(e, RM_ERR_INVALID, "%s: cannot inspect: %s", full, strerror(err));
            free(full);
            break;
        }
        /* A file named like an image that is not a regular one (a FIFO, a
         * device such as a link to /dev/zero, a folder) would be a sample
         * silently dropped; stat told, so nothing was opened (a FIFO would
         * block). */
        if (!want_dirs && !S_ISREG(st.st_mode) && data_is_image_name(de->d_name)) {
            rc = rm_errorf(e, RM_ERR_INVALID, "%s: named like an image but not a regular file (%s)", full,
                           S_ISDIR(st.st_mode)                          ? "a folder"
                           : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                        : "a special file");
            free(full);
            break;
        }
        int keep = want_dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
        free(full);
        if (!keep) continue;
        if (n == cap) {
            int ncap = cap ? 2 * cap : 16;
            char **grown = realloc(list, (size_t)ncap * sizeof *grown);
            if (!grown) {
                rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory listing the folder", dir);
                break;
            }
            list = grown;
            cap = ncap;
        }
        list[n] = strdup(de->d_name);
        if (!list[n]) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory listing the folder", dir);
            break;
        }
        n++;
    }
    closedir(d);
    if (rc) {
        data_free_names(list, n);
        return rc;
    }
    /* readdir order depends on the file system; sorting makes class ids and
     * sample indices the same on every machine. */
    if (n > 1) qsort(list, (size_t)n, sizeof *list, cmp_names);
    *names = list;
    *count = n;
    return RM_OK;
}

static int has_ext(const char *name, const char *const *exts)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (int i = 0; exts[i]; i++) {
        const char *a = dot + 1, *b = exts[i];
        while (*a && *b && tolower((unsigned char)*a) == *b) a++, b++;
        if (!*a && !*b) return 1;
    }
    return 0;
}

int data_is_image_name(const char *name)
{
    static const char *const exts[] = {"png", "jpg", "jpeg", "bmp", NULL};
    return has_ext(name, exts);
}

int data_is_lossy_name(const char *name)
{
    static const char *const exts[] = {"jpg", "jpeg", NULL};
    return has_ext(name, exts);
}
