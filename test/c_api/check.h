/* Small checking helpers for the C API tests (C99). A failed check prints where, the rank and
 * gloo_lite_last_error(), and counts; main() exits non-zero when any failed. */
#ifndef GLOO_LITE_TEST_C_API_CHECK_H_
#define GLOO_LITE_TEST_C_API_CHECK_H_

#include <stdio.h>

#include "gloo_lite/gloo_lite.h"

extern int test_rank;     /* for messages; -1 until known */
extern int test_failures; /* checks that failed */

void check_failed(const char* file, int line, const char* what);

/* CHECK(condition): a test assertion. */
#define CHECK(condition) \
  ((condition) ? (void)0 : check_failed(__FILE__, __LINE__, "CHECK(" #condition ")"))

/* EXPECT_RESULT(expected, call): call returns the expected code. */
#define EXPECT_RESULT(expected, call) expect_result(__FILE__, __LINE__, #call, (expected), (call))
#define EXPECT_OK(call) EXPECT_RESULT(GLOO_LITE_SUCCESS, call)
int expect_result(const char* file, int line, const char* call, gloo_lite_result_t expected,
                  gloo_lite_result_t got);

/* The last error mentions `needle` and, unless NULL, `also` (printing it when not). */
int last_error_mentions(const char* needle, const char* also);

/* The parts of the test (one per file). */
int run_collectives(void);
int run_errors(void);
int run_limits(void); /* huge byte counts and timeouts, 2 ranks */
int run_killed_peer(void);
int run_cuda(void);     /* the CUDA collectives on the host stand-in */
int run_cuda_p2p(void); /* CUDA send/recv on the host stand-in */

#endif
