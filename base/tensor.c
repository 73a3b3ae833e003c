/* Tensor helpers that are not worth inlining. */
#include "tensor.h"

#include <stdio.h>

const char *rm_shape_str(rm_shape s, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%dx%d", s.n, s.c, s.h, s.w);
    return buf;
}
