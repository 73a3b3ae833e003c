/* Property tests too slow to run twice. scripts/test runs the CPU suite
 * twice: plainly (build/) and under AddressSanitizer + UBSan (build-asan/),
 * where the same code runs 3-5x slower. A handful of tests repeat
 * brute-force searches or exact LP bounds over many instances; together
 * they were 286 s of the sanitized suite's 611 test-seconds (CI at
 * 0379b0f..e09a3f4), and every function they call is also called, on
 * smaller inputs, by tests that do run sanitized. Those tests skip
 * themselves there, saying so, and run in full in the plain suite. */
#ifndef REMAT_TESTS_SANITIZED_H
#define REMAT_TESTS_SANITIZED_H

#include <criterion/criterion.h>

#if defined(__SANITIZE_ADDRESS__)
#define RM_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RM_TEST_SANITIZED 1
#endif
#endif
#ifndef RM_TEST_SANITIZED
#define RM_TEST_SANITIZED 0
#endif

/* First statement of such a test. */
#define RM_SKIP_WHEN_SANITIZED()                                                                                       \
    do {                                                                                                               \
        if (RM_TEST_SANITIZED) cr_skip_test("a property search over many instances: run by the plain suite only");     \
    } while (0)

#endif
