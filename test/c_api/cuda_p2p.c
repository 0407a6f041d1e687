/* The C API's CUDA send/recv on the host stand-in layer, 4 ranks under gloo_lite_run: messages
 * around the ring in both directions, blocking and stream-ordered, checked byte for byte against
 * the pattern the sender wrote; then the argument errors (peer outside the group, a tag in the
 * collectives' half, NULL data), and last, because it fails the context, a receive whose size
 * differs from the send's, which must fail on both ranks naming them. */
#include <stdint.h>
#include <string.h>

#include "check.h"

#define BYTES 1000 /* many 64-byte staging slots, with a ragged tail */

static gloo_lite_cuda_comm_t* comm;
static void* stream;
static int rank, size;

static unsigned char pattern(int from, int to, uint64_t tag, int i) {
  return (unsigned char)(from * 37 + to * 11 + (int)tag * 5 + i * 3 + 1);
}

/* Rank r sends to r + shift and receives from r - shift (4 ranks). Around the ring (shift +-1)
 * even ranks send first and odd ranks receive first; across it (shift 2, where the partner is
 * both the target and the source) the lower rank of each pair sends first. Calls of one
 * communicator run one at a time, so two ranks that both receive first would wait forever. */
static void exchange(int shift, uint64_t tag, int ordered) {
  static unsigned char out[BYTES], in[BYTES];
  const int to = (rank + shift + size) % size, from = (rank - shift + size) % size;
  int i, pass;
  gloo_lite_work_t* work = NULL;
  for (i = 0; i < BYTES; ++i) out[i] = pattern(rank, to, tag, i);
  memset(in, 0, sizeof(in));
  for (pass = 0; pass < 2; ++pass) {
    const int sends_first = shift == 2 ? rank < to : rank % 2 == 0;
    if ((pass == 0) == sends_first) {
      EXPECT_OK(ordered ? gloo_lite_cuda_isend(comm, to, out, BYTES, tag, stream, NULL)
                        : gloo_lite_cuda_send(comm, to, out, BYTES, tag, stream));
    } else if (ordered) {
      EXPECT_OK(gloo_lite_cuda_irecv(comm, from, in, BYTES, tag, stream, &work));
    } else {
      EXPECT_OK(gloo_lite_cuda_recv(comm, from, in, BYTES, tag, stream));
    }
  }
  if (ordered) {
    /* The host waits for the stream only; the work handle is checked afterwards. It finishes
     * once the stream has been let go (gloo_lite.h), so a moment after the stream passes: wait
     * for it, boundedly. */
    EXPECT_OK(gloo_lite_cuda_stream_synchronize(comm, stream));
    EXPECT_OK(gloo_lite_work_wait(work, 30000));
    EXPECT_OK(gloo_lite_work_free(work));
  }
  for (i = 0; i < BYTES; ++i) {
    if (in[i] != pattern(from, rank, tag, i)) {
      ++test_failures;
      fprintf(stderr,
              "rank %d: cuda recv (%s, host stand-in) from rank %d, tag %d: byte %d is %d, "
              "expected %d\n",
              rank, ordered ? "stream-ordered" : "blocking", from, (int)tag, i, in[i],
              pattern(from, rank, tag, i));
      return;
    }
  }
}

static void test_errors(void) {
  char x[8] = {0};
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                gloo_lite_cuda_send(comm, size, x, sizeof(x), 0, stream));
  CHECK(last_error_mentions("gloo_lite_cuda_send", "peer 4 is not a rank"));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                gloo_lite_cuda_irecv(comm, -1, x, sizeof(x), 0, stream, NULL));
  CHECK(last_error_mentions("gloo_lite_cuda_irecv", "peer -1 is not a rank"));
  /* A negative tag, as C callers with signed tags pass it, lands in the collectives' half. */
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                gloo_lite_cuda_recv(comm, 0, x, sizeof(x), (uint64_t)(int64_t)-3, stream));
  CHECK(last_error_mentions("gloo_lite_cuda_recv", "not below 2^63"));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                gloo_lite_cuda_isend(comm, 0, NULL, 4, 0, stream, NULL));
  CHECK(last_error_mentions("gloo_lite_cuda_isend", "null"));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT, gloo_lite_cuda_send(NULL, 0, x, 1, 0, stream));
  CHECK(last_error_mentions("comm is NULL", NULL));
  /* Nothing was enqueued: the communicator still works. */
  EXPECT_OK(gloo_lite_cuda_comm_synchronize(comm));
}

/* Rank 0 sends 128 bytes (two 64-byte slots), rank 1 expects 64 (one slot): each chunk alone
 * has the receive's size, so only the total that every send carries first tells them apart.
 * Rank 1's receive fails with a mismatch naming both ranks and both sizes, and aborts the
 * context; rank 0's send is eager and may complete first, so its next operation with rank 1 (a
 * receive rank 1 never matches) fails with rank 1's account of it (a ConnectionError carrying
 * the text, since an abort does not carry the error's kind). */
static void test_size_mismatch(void) {
  static char buffer[128];
  gloo_lite_result_t result;
  if (rank == 0) {
    result = gloo_lite_cuda_send(comm, 1, buffer, 128, 9, stream);
    if (result == GLOO_LITE_SUCCESS) result = gloo_lite_cuda_recv(comm, 1, buffer, 8, 9, stream);
    CHECK(result == GLOO_LITE_ERR_MISMATCH || result == GLOO_LITE_ERR_CONNECTION);
  } else if (rank == 1) {
    result = gloo_lite_cuda_recv(comm, 0, buffer, 64, 9, stream);
    EXPECT_RESULT(GLOO_LITE_ERR_MISMATCH, result);
  } else {
    return;
  }
  CHECK(last_error_mentions("size mismatch", "rank 0"));
  CHECK(last_error_mentions("rank 1", "128 bytes"));
  CHECK(last_error_mentions("64 bytes", "rank 1"));
}

int run_cuda_p2p(void) {
  gloo_lite_context_t* ctx = NULL;
  gloo_lite_cuda_options_t options = {0};
  int ordered;

  if (!EXPECT_OK(gloo_lite_init_from_env(0, &ctx))) return 1;
  EXPECT_OK(gloo_lite_context_rank(ctx, &rank));
  EXPECT_OK(gloo_lite_context_size(ctx, &size));
  test_rank = rank;
  if (size != 4) {
    fprintf(stderr, "run with 4 ranks (gloo_lite_run -n 4)\n");
    return 1;
  }
  options.slot_bytes = 64;
  options.slots = 3;
  options.max_delay_us = 100;
  if (!EXPECT_OK(gloo_lite_cuda_comm_create(ctx, GLOO_LITE_CUDA_HOST_STAND_IN, &options, &comm)))
    return 1;
  EXPECT_OK(gloo_lite_cuda_stream_create(comm, &stream));
  for (ordered = 0; ordered <= 1; ++ordered) {
    exchange(1, 3, ordered);
    exchange(-1, 4, ordered);
    exchange(2, (uint64_t)1 << 40, ordered);
  }
  test_errors();
  test_size_mismatch();
  /* The mismatch failed the context on ranks 0 and 1; destroying still works everywhere. */
  gloo_lite_cuda_stream_destroy(comm, stream);
  gloo_lite_cuda_comm_destroy(comm);
  gloo_lite_destroy(ctx);
  return 0;
}
