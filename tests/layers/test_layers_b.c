/* Gradient checks and shape errors for layer set b. */
#include <criterion/criterion.h>

#include "gradcheck.h"
