#include "status.h"

const char *rm_status_name(rm_status s)
{
    switch (s) {
    case RM_STATUS_ERROR:
        return "error";
    case RM_STATUS_OK:
        return "ok";
    case RM_STATUS_OPTIMAL:
        return "optimal";
    case RM_STATUS_FEASIBLE:
        return "feasible";
    case RM_STATUS_INFEASIBLE:
        return "infeasible";
    case RM_STATUS_NO_SOLUTION:
        return "no solution";
    case RM_STATUS_NOT_APPLICABLE:
        return "n/a";
    }
    return "unknown";
}
