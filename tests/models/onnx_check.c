/* Element-wise comparison with a tolerance (see onnx_check.h). */
#include "onnx_check.h"

#include <math.h>

long onnx_compare(const float *got, const float *want, size_t n, double rtol, double atol)
{
    for (size_t i = 0; i < n; i++) {
        double a = got[i], b = want[i];
        if (isnan(a) || isnan(b)) {
            if (isnan(a) && isnan(b)) continue;
            return (long)i;
        }
        if (!(fabs(a - b) <= atol + rtol * fabs(b))) return (long)i;
    }
    return -1;
}
