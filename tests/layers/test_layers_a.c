/* Gradient checks and shape errors for layer set a. */
#include <criterion/criterion.h>

#include "gradcheck.h"
