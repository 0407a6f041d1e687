/* Every collective and point-to-point call through the C API on 4 ranks, blocking and
 * non-blocking, against references computed here in C from the formula each rank used to fill
 * its inputs. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define P_MAX 16
#define N 5 /* elements per block */

static gloo_lite_context_t* ctx;
static int rank, size;
static int nonblocking; /* the form under test */
static gloo_lite_work_t* work;

/* The value rank `r` holds at element `i` of its input. */
static int32_t v(int r, int i) { return (int32_t)(r * 1000 + i + 1); }

/* Variable blocks: rank j's block has j + 1 elements, at offset j (j + 1) / 2. */
static size_t vcount(int j) { return (size_t)j + 1; }
static size_t voffset(int j) { return (size_t)j * ((size_t)j + 1) / 2; }

static void expect_equal(const char* what, const int32_t* expected, const int32_t* got, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    if (expected[i] != got[i]) {
      ++test_failures;
      fprintf(stderr, "rank %d: %s (%s): element %zu is %d, expected %d\n", rank, what,
              nonblocking ? "non-blocking" : "blocking", i, (int)got[i], (int)expected[i]);
      return;
    }
  }
}

/* Finishes what COLLECTIVE started: the non-blocking form returns a work handle that must
 * finish well. (Which algorithm ran is "" until the stream workers report it.) */
static void finish(const char* name, gloo_lite_result_t started) {
  int done = 0;
  const char* algorithm = NULL;
  gloo_lite_result_t status = GLOO_LITE_ERR_INTERNAL;
  const char* message = NULL;
  if (!EXPECT_OK(started)) {
    fprintf(stderr, "rank %d: %s did not start\n", rank, name);
    return;
  }
  if (!nonblocking) return;
  CHECK(work != NULL);
  if (work == NULL) return;
  EXPECT_OK(gloo_lite_work_wait(work, GLOO_LITE_WAIT_FOREVER));
  EXPECT_OK(gloo_lite_work_test(work, &done));
  CHECK(done == 1);
  EXPECT_OK(gloo_lite_work_error(work, &status, &message));
  CHECK(status == GLOO_LITE_SUCCESS && message != NULL && message[0] == '\0');
  EXPECT_OK(gloo_lite_work_algorithm(work, &algorithm));
  CHECK(algorithm != NULL && algorithm[0] != '\0');
  EXPECT_OK(gloo_lite_work_free(work));
  work = NULL;
}

/* Calls gloo_lite_<name>(args) or gloo_lite_i<name>(args, &work), as the form under test. */
#define COLLECTIVE(name, ...) \
  finish(#name, nonblocking ? gloo_lite_i##name(__VA_ARGS__, &work) : gloo_lite_##name(__VA_ARGS__))

/* A custom reduction: bitwise xor of uint32 (associative and commutative); counts its calls. */
static void xor_reduce(void* inout, const void* in, size_t count, void* user_data) {
  uint32_t* a = (uint32_t*)inout;
  const uint32_t* b = (const uint32_t*)in;
  size_t i;
  for (i = 0; i < count; ++i) a[i] ^= b[i];
  ++*(int32_t*)user_data;
}

static void test_reductions(void) {
  int32_t in[P_MAX * N], out[P_MAX * N], expected[P_MAX * N];
  double din[N], dout[N], dmax[N];
  uint32_t uin[N], uout[N], uexpected[N];
  int32_t calls = 0, all_calls = 0;
  int i, r;
  gloo_lite_options_t custom = GLOO_LITE_OPTIONS_INIT;
  gloo_lite_options_t ring = GLOO_LITE_OPTIONS_INIT;
  gloo_lite_options_t zero = {0}; /* the documented default, like NULL */
  size_t total = 0;

  for (i = 0; i < N; ++i) in[i] = v(rank, i);
  for (i = 0; i < N; ++i) {
    expected[i] = 0;
    for (r = 0; r < size; ++r) expected[i] += v(r, i);
  }
  COLLECTIVE(allreduce, ctx, in, out, N, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL);
  expect_equal("allreduce sum", expected, out, N);
  /* In place, with an algorithm named in the options. */
  ring.algorithm = "ring";
  memcpy(out, in, sizeof(int32_t) * N);
  COLLECTIVE(allreduce, ctx, out, out, N, GLOO_LITE_INT32, GLOO_LITE_SUM, &ring);
  expect_equal("allreduce sum in place (ring)", expected, out, N);

  for (i = 0; i < N; ++i) {
    din[i] = (double)((rank * 7 + i * 3) % 11) - 5.5;
    dmax[i] = -1e300;
    for (r = 0; r < size; ++r) {
      double x = (double)((r * 7 + i * 3) % 11) - 5.5;
      if (x > dmax[i]) dmax[i] = x;
    }
  }
  COLLECTIVE(allreduce, ctx, din, dout, N, GLOO_LITE_FLOAT64, GLOO_LITE_MAX, &zero);
  for (i = 0; i < N; ++i) CHECK(dout[i] == dmax[i]);

  for (i = 0; i < N; ++i) {
    uin[i] = (uint32_t)v(rank, i) * 2654435761u;
    uexpected[i] = 0;
    for (r = 0; r < size; ++r) uexpected[i] ^= (uint32_t)v(r, i) * 2654435761u;
  }
  custom.custom = xor_reduce;
  custom.user_data = &calls;
  COLLECTIVE(allreduce, ctx, uin, uout, N, GLOO_LITE_UINT32, GLOO_LITE_CUSTOM, &custom);
  for (i = 0; i < N; ++i) CHECK(uout[i] == uexpected[i]);
  /* The callback ran (with its user_data): on some ranks at least, as the algorithm decides. */
  EXPECT_OK(gloo_lite_allreduce(ctx, &calls, &all_calls, 1, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL));
  CHECK(all_calls >= size - 1);

  /* reduce to root 1 */
  memset(out, 0, sizeof(out));
  COLLECTIVE(reduce, ctx, in, rank == 1 ? out : NULL, N, GLOO_LITE_INT32, GLOO_LITE_SUM, 1, NULL);
  if (rank == 1) expect_equal("reduce", expected, out, N);

  /* reduce_scatter: block j of the input of rank r is v(r, j * N + i) */
  for (i = 0; i < size * N; ++i) in[i] = v(rank, i);
  for (i = 0; i < N; ++i) {
    expected[i] = 0;
    for (r = 0; r < size; ++r) expected[i] += v(r, rank * N + i);
  }
  COLLECTIVE(reduce_scatter, ctx, in, out, N, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL);
  expect_equal("reduce_scatter", expected, out, N);

  /* reduce_scatterv: rank j receives vcount(j) elements */
  {
    size_t counts[P_MAX];
    for (r = 0; r < size; ++r) counts[r] = vcount(r);
    total = voffset(size);
    for (i = 0; i < (int)total; ++i) in[i] = v(rank, i);
    for (i = 0; i < (int)vcount(rank); ++i) {
      expected[i] = 0;
      for (r = 0; r < size; ++r) expected[i] += v(r, (int)voffset(rank) + i);
    }
    COLLECTIVE(reduce_scatterv, ctx, in, out, counts, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL);
    expect_equal("reduce_scatterv", expected, out, vcount(rank));
  }
}

/* The bitwise ops on integer types: BXOR against the same xor the custom reduction above
 * computes, BAND and BOR on values where every rank clears (sets) bits of its own, so that a
 * rank left out shows. */
static void test_bitwise(void) {
  uint32_t uin[N], uout[N], uexpected[N];
  int64_t lin[N], lout[N], lexpected[N];
  uint8_t bin[N], bout[N], bexpected[N];
  int i, r;
  for (i = 0; i < N; ++i) {
    uin[i] = (uint32_t)v(rank, i) * 2654435761u;
    uexpected[i] = 0;
    for (r = 0; r < size; ++r) uexpected[i] ^= (uint32_t)v(r, i) * 2654435761u;
  }
  COLLECTIVE(allreduce, ctx, uin, uout, N, GLOO_LITE_UINT32, GLOO_LITE_BXOR, NULL);
  for (i = 0; i < N; ++i) CHECK(uout[i] == uexpected[i]);

  /* band to root 0: rank r clears bit r + i of an all-ones int64 (negative: sign bit kept). */
  for (i = 0; i < N; ++i) {
    lin[i] = ~((int64_t)1 << (rank + i));
    lexpected[i] = -1;
    for (r = 0; r < size; ++r) lexpected[i] &= ~((int64_t)1 << (r + i));
  }
  memset(lout, 0, sizeof(lout));
  COLLECTIVE(reduce, ctx, lin, rank == 0 ? lout : NULL, N, GLOO_LITE_INT64, GLOO_LITE_BAND, 0,
             NULL);
  if (rank == 0) {
    for (i = 0; i < N; ++i) CHECK(lout[i] == lexpected[i]);
  }

  /* bor, in place: rank r sets bit (r + i) % 8 of a uint8. */
  for (i = 0; i < N; ++i) {
    bin[i] = (uint8_t)(1u << ((rank + i) % 8));
    bexpected[i] = 0;
    for (r = 0; r < size; ++r) bexpected[i] |= (uint8_t)(1u << ((r + i) % 8));
  }
  memcpy(bout, bin, sizeof(bin));
  COLLECTIVE(allreduce, ctx, bout, bout, N, GLOO_LITE_UINT8, GLOO_LITE_BOR, NULL);
  for (i = 0; i < N; ++i) CHECK(bout[i] == bexpected[i]);
}

/* IEEE binary16 bits of a small positive integer (exact up to 2048). */
static uint16_t half_of(int n) {
  int e = 0;
  while ((2 << e) <= n) ++e;
  return (uint16_t)(((e + 15) << 10) | ((n - (1 << e)) << (10 - e)));
}

/* float16 travels as uint16_t bits: rank r contributes r + 1 (and 2 (r + 1)). */
static void test_float16(void) {
  uint16_t in[2], out[2], expected[2];
  const int sum = size * (size + 1) / 2;
  in[0] = half_of(rank + 1);
  in[1] = half_of(2 * (rank + 1));
  expected[0] = half_of(sum);
  expected[1] = half_of(2 * sum);
  COLLECTIVE(allreduce, ctx, in, out, 2, GLOO_LITE_FLOAT16, GLOO_LITE_SUM, NULL);
  CHECK(out[0] == expected[0] && out[1] == expected[1]);
}

static void test_data_movement(void) {
  int32_t in[P_MAX * P_MAX * 4], out[P_MAX * P_MAX * 4], expected[P_MAX * P_MAX * 4];
  size_t counts[P_MAX], send_counts[P_MAX], recv_counts[P_MAX];
  int i, j;
  const size_t total = voffset(size);

  for (j = 0; j < size; ++j) counts[j] = vcount(j);

  /* allgather, gather to root 2: block j is v(j, i) */
  for (i = 0; i < N; ++i) in[i] = v(rank, i);
  for (j = 0; j < size; ++j) {
    for (i = 0; i < N; ++i) expected[j * N + i] = v(j, i);
  }
  COLLECTIVE(allgather, ctx, in, out, N, GLOO_LITE_INT32, NULL);
  expect_equal("allgather", expected, out, (size_t)size * N);
  memset(out, 0, sizeof(out));
  COLLECTIVE(gather, ctx, in, rank == 2 ? out : NULL, N, GLOO_LITE_INT32, 2, NULL);
  if (rank == 2) expect_equal("gather", expected, out, (size_t)size * N);

  /* allgatherv, gatherv to root 3: rank j contributes vcount(j) elements v(j, i) */
  for (j = 0; j < size; ++j) {
    for (i = 0; i < (int)vcount(j); ++i) expected[voffset(j) + (size_t)i] = v(j, i);
  }
  COLLECTIVE(allgatherv, ctx, in, out, counts, GLOO_LITE_INT32, NULL);
  expect_equal("allgatherv", expected, out, total);
  memset(out, 0, sizeof(out));
  COLLECTIVE(gatherv, ctx, in, rank == 3 ? out : NULL, counts, GLOO_LITE_INT32, 3, NULL);
  if (rank == 3) expect_equal("gatherv", expected, out, total);

  /* scatter(v) from root 0: the root's input is v(0, i); rank r gets its block */
  for (i = 0; i < size * N; ++i) in[i] = v(rank, i);
  for (i = 0; i < N; ++i) expected[i] = v(0, rank * N + i);
  COLLECTIVE(scatter, ctx, rank == 0 ? in : NULL, out, N, GLOO_LITE_INT32, 0, NULL);
  expect_equal("scatter", expected, out, N);
  for (i = 0; i < (int)vcount(rank); ++i) expected[i] = v(0, (int)voffset(rank) + i);
  COLLECTIVE(scatterv, ctx, rank == 0 ? in : NULL, out, counts, GLOO_LITE_INT32, 0, NULL);
  expect_equal("scatterv", expected, out, vcount(rank));

  /* broadcast from root 3 */
  for (i = 0; i < N; ++i) out[i] = v(rank, i);
  for (i = 0; i < N; ++i) expected[i] = v(3, i);
  COLLECTIVE(broadcast, ctx, out, N, GLOO_LITE_INT32, 3, NULL);
  expect_equal("broadcast", expected, out, N);

  /* alltoall: block j of rank r is v(r, j * N + i); rank r receives block r of every rank */
  for (i = 0; i < size * N; ++i) in[i] = v(rank, i);
  for (j = 0; j < size; ++j) {
    for (i = 0; i < N; ++i) expected[j * N + i] = v(j, rank * N + i);
  }
  COLLECTIVE(alltoall, ctx, in, out, N, GLOO_LITE_INT32, NULL);
  expect_equal("alltoall", expected, out, (size_t)size * N);

  /* alltoallv: rank a sends (a + b) % 3 + 1 elements a * 1000 + b * 100 + i to rank b */
  {
    size_t sent = 0, received = 0;
    for (j = 0; j < size; ++j) {
      send_counts[j] = (size_t)((rank + j) % 3 + 1);
      recv_counts[j] = (size_t)((j + rank) % 3 + 1);
      for (i = 0; i < (int)send_counts[j]; ++i) in[sent++] = rank * 1000 + j * 100 + i;
      for (i = 0; i < (int)recv_counts[j]; ++i) expected[received++] = j * 1000 + rank * 100 + i;
    }
    COLLECTIVE(alltoallv, ctx, in, send_counts, out, recv_counts, GLOO_LITE_INT32, NULL);
    expect_equal("alltoallv", expected, out, received);
  }

  COLLECTIVE(barrier, ctx, NULL);
}

/* Point-to-point: a ring (even ranks send first, odd ranks receive first, so that the order is
 * safe however the transfers progress) and a recv_any on rank 0 from every other rank. */
static void test_point_to_point(void) {
  int32_t message[N], received[N], expected[N];
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int i;
  for (i = 0; i < N; ++i) {
    message[i] = v(rank, i);
    expected[i] = v(prev, i);
  }
  memset(received, 0, sizeof(received));
  if (nonblocking) {
    gloo_lite_work_t* sending = NULL;
    gloo_lite_work_t* receiving = NULL;
    if (rank % 2 == 0) {
      EXPECT_OK(gloo_lite_isend(ctx, next, message, sizeof(message), 7, 0, &sending));
      EXPECT_OK(gloo_lite_irecv(ctx, prev, received, sizeof(received), 7, 0, &receiving));
    } else {
      EXPECT_OK(gloo_lite_irecv(ctx, prev, received, sizeof(received), 7, 0, &receiving));
      EXPECT_OK(gloo_lite_isend(ctx, next, message, sizeof(message), 7, 0, &sending));
    }
    EXPECT_OK(gloo_lite_work_wait(sending, GLOO_LITE_WAIT_FOREVER));
    EXPECT_OK(gloo_lite_work_wait(receiving, GLOO_LITE_WAIT_FOREVER));
    gloo_lite_work_free(sending);
    gloo_lite_work_free(receiving);
  } else if (rank % 2 == 0) {
    EXPECT_OK(gloo_lite_send(ctx, next, message, sizeof(message), 7, 0));
    EXPECT_OK(gloo_lite_recv(ctx, prev, received, sizeof(received), 7, 0));
  } else {
    EXPECT_OK(gloo_lite_recv(ctx, prev, received, sizeof(received), 7, 0));
    EXPECT_OK(gloo_lite_send(ctx, next, message, sizeof(message), 7, 0));
  }
  expect_equal("send/recv ring", expected, received, N);

  if (rank == 0) {
    int peers[P_MAX], seen[P_MAX] = {0}, k;
    for (k = 1; k < size; ++k) peers[k - 1] = k;
    for (k = 1; k < size; ++k) {
      int source = -1;
      if (nonblocking) {
        gloo_lite_work_t* any = NULL;
        EXPECT_OK(gloo_lite_irecv_any(ctx, peers, (size_t)size - 1, received, sizeof(received), 8,
                                      0, &any));
        EXPECT_OK(gloo_lite_work_wait(any, GLOO_LITE_WAIT_FOREVER));
        EXPECT_OK(gloo_lite_work_source(any, &source));
        gloo_lite_work_free(any);
      } else {
        EXPECT_OK(gloo_lite_recv_any(ctx, peers, (size_t)size - 1, received, sizeof(received), 8, 0,
                                     &source));
      }
      CHECK(source >= 1 && source < size);
      if (source < 1 || source >= size) continue;
      CHECK(!seen[source]);
      seen[source] = 1;
      for (i = 0; i < N; ++i) expected[i] = v(source, i);
      expect_equal("recv_any", expected, received, N);
    }
  } else {
    EXPECT_OK(gloo_lite_send(ctx, 0, message, sizeof(message), 8, 0));
  }
}

/* gloo_lite_work_wait with a timeout on a receive whose message comes 300 ms later: still
 * running (GLOO_LITE_IN_PROGRESS, not an error), then it finishes well. */
static void test_wait_timeout(void) {
  int32_t value = 0, sent = 4242;
  if (rank == 0) {
    gloo_lite_work_t* receiving = NULL;
    gloo_lite_result_t waited;
    int done = -1;
    EXPECT_OK(gloo_lite_irecv(ctx, 1, &value, sizeof(value), 9, 0, &receiving));
    waited = gloo_lite_work_wait(receiving, 10);
    CHECK(waited == GLOO_LITE_IN_PROGRESS);
    CHECK(gloo_lite_last_error()[0] == '\0');
    EXPECT_OK(gloo_lite_work_test(receiving, &done));
    CHECK(done == 0);
    EXPECT_OK(gloo_lite_work_wait(receiving, GLOO_LITE_WAIT_FOREVER));
    EXPECT_OK(gloo_lite_work_free(receiving));
    CHECK(value == sent);
  } else if (rank == 1) {
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    EXPECT_OK(gloo_lite_send(ctx, 0, &sent, sizeof(sent), 9, 0));
  }
}

int run_collectives(void) {
  int split_rank = -1, split_size = -1;
  gloo_lite_context_t* half = NULL;
  int32_t one = 1, sum = 0;

  if (!EXPECT_OK(gloo_lite_init_from_env(0, &ctx))) return 1;
  EXPECT_OK(gloo_lite_context_rank(ctx, &rank));
  EXPECT_OK(gloo_lite_context_size(ctx, &size));
  test_rank = rank;
  if (size < 2 || size > P_MAX) {
    fprintf(stderr, "run with 2..%d ranks (gloo_lite_run -n 4)\n", P_MAX);
    return 1;
  }
  for (nonblocking = 0; nonblocking <= 1; ++nonblocking) {
    test_reductions();
    test_bitwise();
    test_float16();
    test_data_movement();
    test_point_to_point();
  }

  test_wait_timeout();

  /* split: even and odd ranks; the sum of ones is the size of each half. */
  EXPECT_OK(gloo_lite_split(ctx, rank % 2, rank, &half));
  CHECK(half != NULL);
  if (half != NULL) {
    EXPECT_OK(gloo_lite_context_rank(half, &split_rank));
    EXPECT_OK(gloo_lite_context_size(half, &split_size));
    CHECK(split_rank == rank / 2);
    CHECK(split_size == (size - rank % 2 + 1) / 2);
    EXPECT_OK(gloo_lite_allreduce(half, &one, &sum, 1, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL));
    CHECK(sum == split_size);
    EXPECT_OK(gloo_lite_destroy(half));
  }
  EXPECT_OK(gloo_lite_barrier(ctx, NULL));
  EXPECT_OK(gloo_lite_destroy(ctx));
  return 0;
}
