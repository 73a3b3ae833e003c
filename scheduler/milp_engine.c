/* The engines' names and what "auto" runs (milp_engine.h). The engines
 * themselves: lp_solve's search in milp.c, CBC's child in milp_cbc.c. */
#include "milp_engine.h"

#include <string.h>

#include "cores.h"

const char *rm_milp_engine_name(rm_milp_engine k)
{
    switch (k) {
    case RM_MILP_ENGINE_LPSOLVE:
        return "lp_solve";
    case RM_MILP_ENGINE_CBC:
        return "cbc";
    case RM_MILP_ENGINE_BOTH:
        return "lp_solve+cbc";
    default:
        return "auto";
    }
}

int rm_milp_engine_parse(rm_milp_engine *k, const char *s, rm_err *e)
{
    if (!strcmp(s, "lp_solve")) {
        *k = RM_MILP_ENGINE_LPSOLVE;
    } else if (!strcmp(s, "auto")) {
        *k = RM_MILP_ENGINE_AUTO;
    } else if (!strcmp(s, "cbc")) {
        if (!rm_milp_engine_have_cbc())
            return rm_errorf(e, RM_ERR_INVALID,
                             "--milp-engine cbc: CBC was not built into this remat (install coinor-libcbc-dev and "
                             "build again; lp_solve and auto work without it)");
        *k = RM_MILP_ENGINE_CBC;
    } else {
        return rm_errorf(e, RM_ERR_INVALID, "--milp-engine must be lp_solve, cbc or auto");
    }
    return RM_OK;
}

rm_milp_engine rm_milp_engine_resolve(rm_milp_engine asked, int n, long node_limit, const char **why)
{
    if (why) *why = NULL;
    if (asked == RM_MILP_ENGINE_LPSOLVE) return asked;
    if (!rm_milp_engine_have_cbc()) {
        if (why && asked != RM_MILP_ENGINE_AUTO) *why = "CBC is not built into this remat: lp_solve instead";
        return RM_MILP_ENGINE_LPSOLVE;
    }
    if (asked == RM_MILP_ENGINE_CBC || asked == RM_MILP_ENGINE_BOTH) return asked;
    if (node_limit > 0 || n < RM_MILP_RACE_MIN_NODES) return RM_MILP_ENGINE_LPSOLVE;
    return rm_usable_cores() >= 2 ? RM_MILP_ENGINE_BOTH : RM_MILP_ENGINE_CBC;
}
