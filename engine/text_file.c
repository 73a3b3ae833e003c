#include "text_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

FILE *rm_text_open(const char *path, const char *what, rm_err *e)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        rm_errorf(e, RM_ERR_IO, "%s: is a directory, not a %s", path, what);
        return NULL;
    }
    return fp;
}

size_t rm_text_bom(const char *s, size_t n)
{
    return n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3) ? 3 : 0;
}

