/* One clock and one deadline for a solve (deadline.h). */
#include "deadline.h"

double rm_deadline_in(double limit_s)
{
    return limit_s > 0 ? rm_now() + limit_s : 0;
}

int rm_deadline_passed(double deadline)
{
    return deadline > 0 && rm_now() >= deadline;
}

double rm_deadline_left(double deadline)
{
    if (deadline <= 0) return -1;
    double left = deadline - rm_now();
    return left > 0 ? left : 0;
}

double rm_deadline_share(double deadline, double frac)
{
    if (deadline <= 0) return 0;
    double now = rm_now();
    return deadline > now ? now + frac * (deadline - now) : deadline;
}

double rm_deadline_min(double a, double b)
{
    if (a <= 0) return b;
    if (b <= 0) return a;
    return a < b ? a : b;
}
