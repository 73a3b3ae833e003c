/* Error codes with messages. Library code reports failures through an rm_err
 * the caller owns; it never prints to stdout and never exits. */
#ifndef REMAT_ERROR_H
#define REMAT_ERROR_H

typedef enum rm_code {
    RM_OK = 0,
    RM_ERR_INVALID,    /* bad argument or inconsistent input */
    RM_ERR_NOMEM,      /* allocation failed */
    RM_ERR_IO,         /* file could not be opened, read or written */
    RM_ERR_PARSE,      /* malformed config, problem or schedule file */
    RM_ERR_SHAPE,      /* impossible layer configuration */
    RM_ERR_BUDGET,     /* memory budget exceeded or too small */
    RM_ERR_INFEASIBLE, /* no schedule exists within the budget */
    RM_ERR_SOLVER,     /* lp_solve failed */
    RM_ERR_DEVICE,     /* CUDA / cuBLAS / cuDNN failure */
    RM_ERR_UNSUPPORTED /* feature not available in this build */
} rm_code;

#define RM_ERR_MSG_LEN 512

typedef struct rm_err {
    rm_code code;
    char msg[RM_ERR_MSG_LEN];
} rm_err;

/* Records an error (if e is not NULL) and returns code, so callers can write
 * `return rm_errorf(e, RM_ERR_IO, "%s: cannot open", path);`. */
int rm_errorf(rm_err *e, rm_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefixes context ("while loading x: ") to an error already recorded. */
int rm_err_context(rm_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void rm_err_clear(rm_err *e);
const char *rm_code_name(rm_code code);

#endif
