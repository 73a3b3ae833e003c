/* Error recording: formatted messages in a caller-owned rm_err. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int rm_errorf(rm_err *e, rm_code code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return (int)code;
}

int rm_err_context(rm_err *e, const char *fmt, ...)
{
    if (!e) return RM_ERR_INVALID;
    char prefix[RM_ERR_MSG_LEN], old[RM_ERR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%s: %s", prefix, old);
    return (int)e->code;
}

void rm_err_clear(rm_err *e)
{
    if (e) {
        e->code = RM_OK;
        e->msg[0] = '\0';
    }
}

const char *rm_code_name(rm_code code)
{
    switch (code) {
    case RM_OK:
        return "ok";
    case RM_ERR_INVALID:
        return "invalid argument";
    case RM_ERR_NOMEM:
        return "out of memory";
    case RM_ERR_IO:
        return "i/o error";
    case RM_ERR_PARSE:
        return "parse error";
    case RM_ERR_SHAPE:
        return "shape error";
    case RM_ERR_BUDGET:
        return "budget error";
    case RM_ERR_INFEASIBLE:
        return "infeasible";
    case RM_ERR_SOLVER:
        return "solver error";
    case RM_ERR_DEVICE:
        return "device error";
    case RM_ERR_UNSUPPORTED:
        return "unsupported";
    }
    return "unknown error";
}
