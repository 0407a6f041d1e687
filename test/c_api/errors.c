/* The error paths of the C API on 4 ranks, seen only through result codes and messages: bad
 * arguments (which consume nothing), a mismatch caught by the call check, and a timeout. The
 * killed peer is killed_peer.c. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Expects GLOO_LITE_ERR_INVALID_ARGUMENT from `call` with a message naming `function` and
 * `argument`. */
#define EXPECT_INVALID(call, function, argument)               \
  do {                                                         \
    if (EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT, call)) { \
      CHECK(last_error_mentions(function, argument));          \
    }                                                          \
  } while (0)

static void test_library(void) {
  size_t bytes = 0;
  CHECK(strcmp(gloo_lite_version(), GLOO_LITE_VERSION_STRING) == 0);
  CHECK(GLOO_LITE_VERSION ==
        GLOO_LITE_VERSION_MAJOR * 10000 + GLOO_LITE_VERSION_MINOR * 100 + GLOO_LITE_VERSION_PATCH);
  CHECK(strcmp(gloo_lite_result_name(GLOO_LITE_ERR_TIMEOUT), "timeout") == 0);
  EXPECT_OK(gloo_lite_type_size(GLOO_LITE_BFLOAT16, &bytes));
  CHECK(bytes == 2);
  CHECK(gloo_lite_last_error()[0] == '\0'); /* empty after a success */
  EXPECT_INVALID(gloo_lite_type_size((gloo_lite_datatype_t)42, &bytes), "gloo_lite_type_size",
                 "type 42");
  EXPECT_INVALID(gloo_lite_type_size(GLOO_LITE_INT8, NULL), "gloo_lite_type_size", "size");
  CHECK(gloo_lite_last_error()[0] != '\0');
  EXPECT_OK(gloo_lite_destroy(NULL)); /* like free(NULL) */
  EXPECT_OK(gloo_lite_work_free(NULL));
  CHECK(gloo_lite_last_error()[0] == '\0');
}

static void test_creation(void) {
  gloo_lite_context_t* ctx = (gloo_lite_context_t*)&ctx; /* must be overwritten with NULL */
  EXPECT_INVALID(gloo_lite_init(NULL, NULL, 0, 1, 0, &ctx), "gloo_lite_init", "store_url");
  CHECK(ctx == NULL);
  EXPECT_INVALID(gloo_lite_init("file:///tmp", NULL, 3, 2, 0, &ctx), "gloo_lite_init", "rank");
  EXPECT_INVALID(gloo_lite_init("file:///tmp", NULL, 0, 0, 0, &ctx), "gloo_lite_init", "size");
  EXPECT_INVALID(gloo_lite_init("nosuch://x", NULL, 0, 1, 100, &ctx), "gloo_lite_init", "nosuch");
  EXPECT_INVALID(gloo_lite_init("file:///tmp", NULL, 0, 1, -5, &ctx), "gloo_lite_init",
                 "timeout_ms");
  EXPECT_INVALID(gloo_lite_init_from_env(0, NULL), "gloo_lite_init_from_env", "context");
}

/* Every bad argument is refused before anything starts, naming the function and argument. */
static void test_bad_arguments(gloo_lite_context_t* ctx, int rank, int size) {
  int32_t buffer[64] = {0};
  size_t counts[16];
  int peer = 1, i, source;
  gloo_lite_work_t* work = (gloo_lite_work_t*)&work;
  gloo_lite_options_t options = GLOO_LITE_OPTIONS_INIT;
  for (i = 0; i < 16; ++i) counts[i] = 1;

  EXPECT_INVALID(gloo_lite_allreduce(NULL, buffer, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL),
                 "gloo_lite_allreduce", "context");
  EXPECT_INVALID(gloo_lite_allreduce(ctx, NULL, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL),
                 "gloo_lite_allreduce", "input");
  EXPECT_INVALID(gloo_lite_allreduce(ctx, buffer, NULL, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL),
                 "gloo_lite_allreduce", "output");
  EXPECT_INVALID(
      gloo_lite_allreduce(ctx, buffer, buffer, 4, (gloo_lite_datatype_t)42, GLOO_LITE_SUM, NULL),
      "gloo_lite_allreduce", "type 42");
  EXPECT_INVALID(
      gloo_lite_allreduce(ctx, buffer, buffer, 4, (gloo_lite_datatype_t)-1, GLOO_LITE_SUM, NULL),
      "gloo_lite_allreduce", "type -1");
  EXPECT_INVALID(
      gloo_lite_allreduce(ctx, buffer, buffer, 4, GLOO_LITE_INT32, (gloo_lite_op_t)9, NULL),
      "gloo_lite_allreduce", "op 9");
  EXPECT_INVALID(
      gloo_lite_allreduce(ctx, buffer, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_CUSTOM, &options),
      "gloo_lite_allreduce", "custom");
  /* The bitwise ops take integer types only. */
  EXPECT_INVALID(
      gloo_lite_allreduce(ctx, buffer, buffer, 4, GLOO_LITE_FLOAT32, GLOO_LITE_BXOR, NULL),
      "gloo_lite_allreduce", "bxor on float32");
  EXPECT_INVALID(gloo_lite_ireduce_scatter(ctx, buffer, buffer + 32, 2, GLOO_LITE_FLOAT64,
                                           GLOO_LITE_BAND, NULL, &work),
                 "gloo_lite_ireduce_scatter", "integer type");
  CHECK(work == NULL);
  work = (gloo_lite_work_t*)&work;
  options.timeout_ms = -1;
  EXPECT_INVALID(
      gloo_lite_allreduce(ctx, buffer, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, &options),
      "gloo_lite_allreduce", "timeout_ms");
  options.timeout_ms = 0;
  options.algorithm = "no_such_algorithm";
  EXPECT_INVALID(
      gloo_lite_allreduce(ctx, buffer, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, &options),
      "gloo_lite_allreduce", "no_such_algorithm");
  EXPECT_INVALID(
      gloo_lite_iallreduce(ctx, buffer, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL, NULL),
      "gloo_lite_iallreduce", "work");
  EXPECT_INVALID(gloo_lite_ibroadcast(ctx, buffer, 4, GLOO_LITE_INT32, size, NULL, &work),
                 "gloo_lite_ibroadcast", "root");
  CHECK(work == NULL); /* a refused call hands out no work */
  EXPECT_INVALID(gloo_lite_broadcast(ctx, buffer, 4, GLOO_LITE_INT32, -1, NULL),
                 "gloo_lite_broadcast", "root");
  EXPECT_INVALID(
      gloo_lite_reduce(ctx, buffer, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, size, NULL),
      "gloo_lite_reduce", "root");
  EXPECT_INVALID(gloo_lite_gatherv(ctx, buffer, buffer, NULL, GLOO_LITE_INT32, 0, NULL),
                 "gloo_lite_gatherv", "counts");
  EXPECT_INVALID(gloo_lite_alltoallv(ctx, buffer, counts, buffer + 32, NULL, GLOO_LITE_INT32, NULL),
                 "gloo_lite_alltoallv", "recv_counts");
  EXPECT_INVALID(gloo_lite_barrier(NULL, NULL), "gloo_lite_barrier", "context");
  EXPECT_INVALID(gloo_lite_send(ctx, peer, buffer, 4, (uint64_t)1 << 63, 0), "gloo_lite_send",
                 "tag");
  EXPECT_INVALID(gloo_lite_send(ctx, peer, NULL, 4, 1, 0), "gloo_lite_send", "");
  EXPECT_INVALID(gloo_lite_recv(ctx, size, buffer, 4, 1, 0), "gloo_lite_recv", "");
  EXPECT_INVALID(gloo_lite_recv_any(ctx, NULL, 1, buffer, 4, 1, 0, &source), "gloo_lite_recv_any",
                 "peers");
  EXPECT_INVALID(gloo_lite_recv_any(ctx, &peer, 1, buffer, 4, 1, 0, NULL), "gloo_lite_recv_any",
                 "source");
  EXPECT_INVALID(gloo_lite_work_wait(NULL, 0), "gloo_lite_work_wait", "work");
  EXPECT_INVALID(gloo_lite_split(ctx, 0, 0, NULL), "gloo_lite_split", "new_context");
  EXPECT_INVALID(gloo_lite_context_rank(ctx, NULL), "gloo_lite_context_rank", "rank");
  EXPECT_INVALID(gloo_lite_abort(NULL, "x"), "gloo_lite_abort", "context");

  /* input == output is in place only where the rank's own block is at offset 0: on other ranks
   * it overlaps (the root's block of a scatter, the rank's block of an allgather or gather). */
  if (rank != 0) {
    EXPECT_INVALID(gloo_lite_scatter(ctx, buffer, buffer, 4, GLOO_LITE_INT32, rank, NULL),
                   "gloo_lite_scatter", "the root's own block of the input");
    EXPECT_INVALID(gloo_lite_gather(ctx, buffer, buffer, 4, GLOO_LITE_INT32, rank, NULL),
                   "gloo_lite_gather", "the root's own block of the output");
    EXPECT_INVALID(gloo_lite_allgather(ctx, buffer, buffer, 4, GLOO_LITE_INT32, NULL),
                   "gloo_lite_allgather", "this rank's block of the output");
  }

  /* Nothing was consumed: the context still works. */
  for (i = 0; i < 4; ++i) buffer[i] = i;
  EXPECT_OK(gloo_lite_allreduce(ctx, buffer, buffer, 4, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL));
  for (i = 0; i < 4; ++i) CHECK(buffer[i] == i * size);
}

/* Ranks disagreeing about a count, with the call check on: every rank gets a mismatch. On a
 * context of its own, since a failure ends the context. */
static void test_mismatch(gloo_lite_context_t* world, int rank) {
  gloo_lite_context_t* ctx = NULL;
  int32_t buffer[8] = {0};
  gloo_lite_options_t options = GLOO_LITE_OPTIONS_INIT;
  options.check = 1;
  if (!EXPECT_OK(gloo_lite_split(world, 0, rank, &ctx))) return;
  EXPECT_RESULT(GLOO_LITE_ERR_MISMATCH,
                gloo_lite_allreduce(ctx, buffer, buffer, rank == 0 ? 8 : 4, GLOO_LITE_INT32,
                                    GLOO_LITE_SUM, &options));
  CHECK(gloo_lite_last_error()[0] != '\0');
  EXPECT_OK(gloo_lite_destroy(ctx));
}

/* A handle used after gloo_lite_destroy, or destroyed twice, is refused as a destroyed context
 * (not read as a context of size 0, nor freed twice). On a one-rank context of its own. */
static void test_destroyed(gloo_lite_context_t* world, int rank) {
  gloo_lite_context_t* solo = NULL;
  int32_t buffer[4] = {0};
  int size = -1;
  if (!EXPECT_OK(gloo_lite_split(world, rank, 0, &solo))) return;
  EXPECT_OK(gloo_lite_destroy(solo));
  EXPECT_INVALID(gloo_lite_broadcast(solo, buffer, 4, GLOO_LITE_INT32, 0, NULL),
                 "gloo_lite_broadcast", "destroyed context");
  EXPECT_INVALID(gloo_lite_context_size(solo, &size), "gloo_lite_context_size",
                 "destroyed context");
  EXPECT_INVALID(gloo_lite_destroy(solo), "gloo_lite_destroy", "destroyed context");
}

/* A work handle used after gloo_lite_work_free (wait, test, error, a second free) is refused as
 * a destroyed work handle, where it was freed memory read as a handle (issue 23, part 2, item
 * C): a one-rank context's broadcast, finished and freed. */
static void test_destroyed_work(gloo_lite_context_t* world, int rank) {
  gloo_lite_context_t* solo = NULL;
  gloo_lite_work_t* work = NULL;
  gloo_lite_result_t status = GLOO_LITE_SUCCESS;
  int32_t buffer[4] = {0};
  int done = -1;
  if (!EXPECT_OK(gloo_lite_split(world, rank, 0, &solo))) return;
  if (EXPECT_OK(gloo_lite_ibroadcast(solo, buffer, 4, GLOO_LITE_INT32, 0, NULL, &work))) {
    EXPECT_OK(gloo_lite_work_wait(work, GLOO_LITE_WAIT_FOREVER));
    EXPECT_OK(gloo_lite_work_free(work));
    EXPECT_INVALID(gloo_lite_work_wait(work, GLOO_LITE_WAIT_FOREVER), "gloo_lite_work_wait",
                   "destroyed work handle");
    EXPECT_INVALID(gloo_lite_work_test(work, &done), "gloo_lite_work_test",
                   "destroyed work handle");
    EXPECT_INVALID(gloo_lite_work_error(work, &status, NULL), "gloo_lite_work_error",
                   "destroyed work handle");
    EXPECT_INVALID(gloo_lite_work_free(work), "gloo_lite_work_free", "destroyed work handle");
    CHECK(done == -1);
  }
  EXPECT_OK(gloo_lite_work_free(NULL)); /* like free(NULL) */
  EXPECT_OK(gloo_lite_destroy(solo));
}

/* Rank 0 waits for a message from rank 1 that never comes, on a two-rank context of its own:
 * the receive times out after its 300 ms, well before the context's timeout. Rank 1 stays until
 * rank 0 is done (the barrier on the world context). */
static void test_timeout(gloo_lite_context_t* world, int rank) {
  gloo_lite_context_t* pair = NULL;
  int32_t buffer[4];
  if (!EXPECT_OK(gloo_lite_split(world, rank < 2 ? 0 : -1, rank, &pair))) return;
  CHECK((pair != NULL) == (rank < 2));
  if (rank == 0) {
    gloo_lite_work_t* work = NULL;
    gloo_lite_result_t status = GLOO_LITE_SUCCESS;
    const char* message = NULL;
    double start = now_s(), elapsed;
    EXPECT_RESULT(GLOO_LITE_ERR_TIMEOUT, gloo_lite_recv(pair, 1, buffer, sizeof(buffer), 99, 300));
    elapsed = now_s() - start;
    CHECK(gloo_lite_last_error()[0] != '\0');
    CHECK(elapsed >= 0.25 && elapsed < 10.0);
    /* The non-blocking form reports it through its handle (and its wait). */
    if (EXPECT_OK(gloo_lite_irecv(pair, 1, buffer, sizeof(buffer), 98, 200, &work))) {
      /* A timeout, or the failure the first one left on the context. */
      gloo_lite_result_t waited = gloo_lite_work_wait(work, GLOO_LITE_WAIT_FOREVER);
      CHECK(waited == GLOO_LITE_ERR_TIMEOUT || waited == GLOO_LITE_ERR_CONNECTION);
      CHECK(gloo_lite_last_error()[0] != '\0');
      EXPECT_OK(gloo_lite_work_error(work, &status, &message));
      CHECK(status == waited);
      CHECK(message != NULL && message[0] != '\0');
      gloo_lite_work_free(work);
    }
  }
  EXPECT_OK(gloo_lite_barrier(world, NULL));
  EXPECT_OK(gloo_lite_destroy(pair));
}

int run_errors(void) {
  gloo_lite_context_t* world = NULL;
  int rank = -1, size = 0;
  test_library();
  test_creation();
  if (!EXPECT_OK(gloo_lite_init_from_env(0, &world))) return 1;
  EXPECT_OK(gloo_lite_context_rank(world, &rank));
  EXPECT_OK(gloo_lite_context_size(world, &size));
  test_rank = rank;
  test_bad_arguments(world, rank, size);
  test_mismatch(world, rank);
  test_destroyed(world, rank);
  test_destroyed_work(world, rank);
  test_timeout(world, rank);
  EXPECT_OK(gloo_lite_destroy(world));
  return 0;
}
