/* The C API test, written in C: `c_api_test collectives|errors` under gloo_lite_run -n 4, and
 * `c_api_test killed_peer`, which starts its own four ranks (it needs one of them to die). */
#include <stdio.h>
#include <string.h>

#include "check.h"

int test_rank = -1;
int test_failures = 0;

void check_failed(const char* file, int line, const char* what) {
  ++test_failures;
  fprintf(stderr, "%s:%d: rank %d: %s failed (last error: '%s')\n", file, line, test_rank, what,
          gloo_lite_last_error());
}

int expect_result(const char* file, int line, const char* call, gloo_lite_result_t expected,
                  gloo_lite_result_t got) {
  if (got == expected) return 1;
  ++test_failures;
  fprintf(stderr, "%s:%d: rank %d: %s returned %s (%d), expected %s: '%s'\n", file, line, test_rank,
          call, gloo_lite_result_name(got), (int)got, gloo_lite_result_name(expected),
          gloo_lite_last_error());
  return 0;
}

int last_error_mentions(const char* needle, const char* also) {
  const char* message = gloo_lite_last_error();
  int found = strstr(message, needle) != NULL && (also == NULL || strstr(message, also) != NULL);
  if (!found) {
    fprintf(stderr, "rank %d: the error '%s' does not mention '%s'%s%s\n", test_rank, message,
            needle, also ? " and " : "", also ? also : "");
  }
  return found;
}

int main(int argc, char** argv) {
  int status;
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test collectives|errors|limits|cuda|cuda_p2p|killed_peer\n");
    return 2;
  }
  if (strcmp(argv[1], "collectives") == 0) {
    status = run_collectives();
  } else if (strcmp(argv[1], "errors") == 0) {
    status = run_errors();
  } else if (strcmp(argv[1], "cuda") == 0) {
    status = run_cuda();
  } else if (strcmp(argv[1], "cuda_p2p") == 0) {
    status = run_cuda_p2p();
  } else if (strcmp(argv[1], "limits") == 0) {
    status = run_limits();
  } else if (strcmp(argv[1], "killed_peer") == 0) {
    status = run_killed_peer();
  } else {
    fprintf(stderr, "c_api_test: unknown part '%s'\n", argv[1]);
    return 2;
  }
  /* test_rank is -1 in killed_peer's parent, which reports its ranks' exits itself. */
  if (status != 0 || test_failures != 0) {
    fprintf(stderr, "c_api_test %s: rank %d: failed (%d check(s))\n", argv[1], test_rank,
            test_failures);
    return 1;
  }
  printf("c_api_test %s: rank %d passed\n", argv[1], test_rank);
  return 0;
}
