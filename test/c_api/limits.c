/* The C API at the edges of its integer arguments, on 2 ranks (run over shm and over tcp):
 * byte counts no buffer can hold are refused before any memory is touched. */
#include <stdint.h>
#include <stdio.h>

#include "check.h"

/* send/recv (both forms) of byte counts far beyond the 64-byte buffer: INVALID_ARGUMENT naming
 * the call, the peer and the count, and nothing consumed (a transfer of the right size works
 * afterwards). The receiver used to write the sender's memory past its buffer over shm. */
static void test_huge_byte_counts(gloo_lite_context_t* ctx, int rank) {
  static const uint64_t counts[] = {(uint64_t)1 << 40, (uint64_t)1 << 47, (uint64_t)1 << 62,
                                    INT64_MAX,         (uint64_t)1 << 63, UINT64_MAX};
  int64_t buffer[8] = {0};
  const int peer = 1 - rank;
  char bytes_text[32];
  size_t i;
  for (i = 0; i < sizeof(counts) / sizeof(counts[0]); ++i) {
    const size_t bytes = (size_t)counts[i];
    gloo_lite_work_t* work = NULL;
    snprintf(bytes_text, sizeof(bytes_text), "%llu bytes", (unsigned long long)bytes);
    if (rank == 0) {
      if (EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                        gloo_lite_send(ctx, peer, buffer, bytes, 7, 2000))) {
        CHECK(last_error_mentions("send", bytes_text) && last_error_mentions("rank 1", NULL));
      }
      EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                    gloo_lite_isend(ctx, peer, buffer, bytes, 7, 2000, &work));
      CHECK(work == NULL);
    } else {
      if (EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                        gloo_lite_recv(ctx, peer, buffer, bytes, 7, 2000))) {
        CHECK(last_error_mentions("recv", bytes_text) && last_error_mentions("rank 0", NULL));
      }
      EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                    gloo_lite_irecv(ctx, peer, buffer, bytes, 7, 2000, &work));
      CHECK(work == NULL);
    }
  }
  /* Nothing was consumed on either side. */
  buffer[0] = 42;
  if (rank == 0) {
    EXPECT_OK(gloo_lite_send(ctx, peer, buffer, sizeof(buffer), 7, 0));
  } else {
    buffer[0] = 0;
    EXPECT_OK(gloo_lite_recv(ctx, peer, buffer, sizeof(buffer), 7, 0));
    CHECK(buffer[0] == 42);
  }
}

int run_limits(void) {
  gloo_lite_context_t* ctx = NULL;
  int rank = -1, size = 0;
  if (!EXPECT_OK(gloo_lite_init_from_env(0, &ctx))) return 1;
  EXPECT_OK(gloo_lite_context_rank(ctx, &rank));
  EXPECT_OK(gloo_lite_context_size(ctx, &size));
  test_rank = rank;
  CHECK(size == 2);
  test_huge_byte_counts(ctx, rank);
  EXPECT_OK(gloo_lite_barrier(ctx, NULL));
  EXPECT_OK(gloo_lite_destroy(ctx));
  return 0;
}
