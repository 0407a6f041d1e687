/* The C API's CUDA collectives on the host stand-in layer (no GPU: "device" memory is host
 * memory, streams are worker threads with injected delays), 4 ranks under gloo_lite_run: every
 * collective, blocking and stream-ordered, against references computed here; then the error
 * paths, and a CUDA device, which must either work or report GLOO_LITE_ERR_UNAVAILABLE. */
#include <stdint.h>
#include <string.h>

#include "check.h"

#define P_MAX 16
#define N 37 /* elements per block: several 64-byte staging slots, with a ragged tail */

static gloo_lite_cuda_comm_t* comm;
static void* stream;
static int rank, size;
static int ordered; /* the form under test: 1 stream-ordered (i-forms), 0 blocking */
static gloo_lite_work_t* work;

static int32_t v(int r, int i) { return (int32_t)(r * 1000 + i + 1); }

static void expect_equal(const char* what, const int32_t* expected, const int32_t* got, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    if (expected[i] != got[i]) {
      ++test_failures;
      fprintf(stderr, "rank %d: cuda %s (%s, host stand-in): element %zu is %d, expected %d\n",
              rank, what, ordered ? "stream-ordered" : "blocking", i, (int)got[i],
              (int)expected[i]);
      return;
    }
  }
}

/* After a stream-ordered call the host waits for the stream only (half the time through the
 * work handle first): the result must be in place once the stream has passed the call. */
static void finish(const char* name, gloo_lite_result_t started) {
  if (!EXPECT_OK(started)) {
    fprintf(stderr, "rank %d: cuda %s did not start\n", rank, name);
    return;
  }
  if (!ordered) return;
  if (work != NULL) {
    EXPECT_OK(gloo_lite_work_wait(work, GLOO_LITE_WAIT_FOREVER));
    EXPECT_OK(gloo_lite_work_free(work));
    work = NULL;
  }
  EXPECT_OK(gloo_lite_cuda_stream_synchronize(comm, stream));
}

/* Calls gloo_lite_cuda_<name>(args, stream, NULL) or the stream-ordered i-form, alternating
 * between asking for the work handle and not. */
#define CUDA_CALL(name, ...)                                                                     \
  finish(#name,                                                                                  \
         ordered ? gloo_lite_cuda_i##name(__VA_ARGS__, stream, NULL, (flip ^= 1) ? &work : NULL) \
                 : gloo_lite_cuda_##name(__VA_ARGS__, stream, NULL))

static int flip;

static void test_collectives(void) {
  static int32_t in[P_MAX * N], out[P_MAX * N], expected[P_MAX * N];
  static float fin[N], fout[N];
  int i, r, b;

  for (i = 0; i < N; ++i) in[i] = v(rank, i);
  for (i = 0; i < N; ++i) {
    expected[i] = 0;
    for (r = 0; r < size; ++r) expected[i] += v(r, i);
  }
  memset(out, 0, sizeof(out));
  CUDA_CALL(allreduce, comm, in, out, N, GLOO_LITE_INT32, GLOO_LITE_SUM);
  expect_equal("allreduce sum", expected, out, N);

  for (i = 0; i < N; ++i) fin[i] = (float)((rank * 7 + i * 3) % 11) - 5.5f;
  memcpy(fout, fin, sizeof(fin));
  CUDA_CALL(allreduce, comm, fout, fout, N, GLOO_LITE_FLOAT32, GLOO_LITE_MIN);
  for (i = 0; i < N; ++i) {
    float m = 1e30f;
    for (r = 0; r < size; ++r) {
      float x = (float)((r * 7 + i * 3) % 11) - 5.5f;
      if (x < m) m = x;
    }
    CHECK(fout[i] == m);
  }

  /* reduce to root 1 */
  memset(out, 0, sizeof(out));
  CUDA_CALL(reduce, comm, in, rank == 1 ? out : NULL, N, GLOO_LITE_INT32, GLOO_LITE_SUM, 1);
  if (rank == 1) expect_equal("reduce", expected, out, N);

  /* broadcast from root 2 */
  for (i = 0; i < N; ++i) out[i] = rank == 2 ? v(2, i) : -1;
  for (i = 0; i < N; ++i) expected[i] = v(2, i);
  CUDA_CALL(broadcast, comm, out, N, GLOO_LITE_INT32, 2);
  expect_equal("broadcast", expected, out, N);

  /* allgather: block r is rank r's input */
  for (r = 0; r < size; ++r)
    for (i = 0; i < N; ++i) expected[r * N + i] = v(r, i);
  memset(out, 0, sizeof(out));
  CUDA_CALL(allgather, comm, in, out, N, GLOO_LITE_INT32);
  expect_equal("allgather", expected, out, (size_t)size * N);

  /* reduce_scatter: block j of rank r's input is v(r, j * N + i) */
  for (i = 0; i < size * N; ++i) in[i] = v(rank, i);
  for (i = 0; i < N; ++i) {
    expected[i] = 0;
    for (r = 0; r < size; ++r) expected[i] += v(r, rank * N + i);
  }
  memset(out, 0, sizeof(out));
  CUDA_CALL(reduce_scatter, comm, in, out, N, GLOO_LITE_INT32, GLOO_LITE_SUM);
  expect_equal("reduce_scatter", expected, out, N);

  /* alltoall: block b of rank r goes to block r of rank b */
  for (b = 0; b < size; ++b)
    for (i = 0; i < N; ++i) expected[b * N + i] = v(b, rank * N + i);
  memset(out, 0, sizeof(out));
  CUDA_CALL(alltoall, comm, in, out, N, GLOO_LITE_INT32);
  expect_equal("alltoall", expected, out, (size_t)size * N);
}

static void test_errors(gloo_lite_context_t* ctx) {
  gloo_lite_cuda_comm_t* other = NULL;
  gloo_lite_result_t available;
  int32_t x = 0;

  EXPECT_RESULT(
      GLOO_LITE_ERR_INVALID_ARGUMENT,
      gloo_lite_cuda_allreduce(NULL, &x, &x, 1, GLOO_LITE_INT32, GLOO_LITE_SUM, stream, NULL));
  CHECK(last_error_mentions("gloo_lite_cuda_allreduce", "comm is NULL"));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                gloo_lite_cuda_allreduce(comm, &x, &x, 1, 99, GLOO_LITE_SUM, stream, NULL));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                gloo_lite_cuda_broadcast(comm, &x, 1, GLOO_LITE_INT32, size, stream, NULL));
  CHECK(last_error_mentions("gloo_lite_cuda_broadcast", NULL));
  /* The stand-in has no legacy default stream: a NULL stream is refused, naming the layer. */
  EXPECT_RESULT(
      GLOO_LITE_ERR_INVALID_ARGUMENT,
      gloo_lite_cuda_allreduce(comm, &x, &x, 1, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL, NULL));
  CHECK(last_error_mentions("host stand-in", NULL));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT, gloo_lite_cuda_comm_create(ctx, -7, NULL, &other));
  CHECK(other == NULL && last_error_mentions("device -7", NULL));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT,
                gloo_lite_cuda_comm_create(ctx, GLOO_LITE_CUDA_HOST_STAND_IN, NULL, NULL));
  CHECK(strcmp(gloo_lite_result_name(GLOO_LITE_ERR_UNAVAILABLE), "unavailable") == 0);

  /* A CUDA device: usable, or unavailable saying why (here: no GPU, or built without CUDA). */
  available = gloo_lite_cuda_available();
  if (available == GLOO_LITE_SUCCESS) {
    EXPECT_OK(gloo_lite_cuda_comm_create(ctx, 0, NULL, &other));
    EXPECT_OK(gloo_lite_cuda_comm_destroy(other));
  } else {
    EXPECT_RESULT(GLOO_LITE_ERR_UNAVAILABLE, available);
    CHECK(gloo_lite_last_error()[0] != '\0');
    if (rank == 0) printf("c_api_test cuda: no CUDA device here: %s\n", gloo_lite_last_error());
    EXPECT_RESULT(GLOO_LITE_ERR_UNAVAILABLE, gloo_lite_cuda_comm_create(ctx, 0, NULL, &other));
    CHECK(other == NULL && last_error_mentions("gloo_lite_cuda_comm_create", NULL));
  }
  EXPECT_OK(gloo_lite_cuda_comm_destroy(NULL));
}

int run_cuda(void) {
  gloo_lite_context_t* ctx = NULL;
  gloo_lite_cuda_options_t options = {0};
  const char* layer = NULL;

  if (!EXPECT_OK(gloo_lite_init_from_env(0, &ctx))) return 1;
  EXPECT_OK(gloo_lite_context_rank(ctx, &rank));
  EXPECT_OK(gloo_lite_context_size(ctx, &size));
  test_rank = rank;
  if (size < 3 || size > P_MAX) {
    fprintf(stderr, "run with 3..%d ranks (gloo_lite_run -n 4)\n", P_MAX);
    return 1;
  }
  /* Small slots, so that every call is many pipelined chunks; delays make a missing wait show. */
  options.slot_bytes = 64;
  options.slots = 3;
  options.max_delay_us = 100;
  if (!EXPECT_OK(gloo_lite_cuda_comm_create(ctx, GLOO_LITE_CUDA_HOST_STAND_IN, &options, &comm)))
    return 1;
  EXPECT_OK(gloo_lite_cuda_comm_layer(comm, &layer));
  CHECK(layer != NULL && strstr(layer, "host stand-in") != NULL);
  EXPECT_OK(gloo_lite_cuda_stream_create(comm, &stream));
  for (ordered = 0; ordered <= 1; ++ordered) test_collectives();
  EXPECT_OK(gloo_lite_cuda_comm_synchronize(comm));
  test_errors(ctx);
  EXPECT_OK(gloo_lite_cuda_stream_destroy(comm, stream));
  EXPECT_OK(gloo_lite_cuda_comm_destroy(comm));
  /* A destroyed communicator's handle is refused by name, not read as freed memory. */
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT, gloo_lite_cuda_comm_layer(comm, &layer));
  CHECK(last_error_mentions("gloo_lite_cuda_comm_layer", "destroyed CUDA communicator"));
  EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT, gloo_lite_cuda_comm_destroy(comm));
  CHECK(last_error_mentions("gloo_lite_cuda_comm_destroy", "destroyed CUDA communicator"));
  EXPECT_OK(gloo_lite_destroy(ctx));
  return 0;
}
