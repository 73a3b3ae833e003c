#include "text_fields.h"

#include <ctype.h>
#include <string.h>

int rm_text_fields(char *line, char **f, int cap)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    int nf = 0;
    for (char *s = line; *s;) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        if (nf < cap) f[nf] = s;
        nf++;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (*s) *s++ = '\0';
    }
    return nf;
}
