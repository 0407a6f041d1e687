/* A peer killed mid-job: four ranks, forked here and joined with gloo_lite_init on a file
 * store (so that the launcher does not stop the survivors first), run an allreduce; then rank 2
 * dies by SIGKILL and the others' next allreduce must fail with GLOO_LITE_ERR_CONNECTION,
 * promptly, not at the context's 30 s timeout. */
#define _POSIX_C_SOURCE 200809L /* fork, mkdtemp, kill, clock_gettime */

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define RANKS 4
#define VICTIM 2
#define TIMEOUT_MS 30000

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int run_rank(const char* store_url) {
  gloo_lite_context_t* ctx = NULL;
  int32_t data[16];
  double start, elapsed;
  char why[1024];
  int i;
  gloo_lite_result_t result;
  if (!EXPECT_OK(
          gloo_lite_init(store_url, "c_api_killed_peer", test_rank, RANKS, TIMEOUT_MS, &ctx))) {
    return 1;
  }
  for (i = 0; i < 16; ++i) data[i] = test_rank;
  EXPECT_OK(gloo_lite_allreduce(ctx, data, data, 16, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL));
  CHECK(data[0] == RANKS * (RANKS - 1) / 2);
  if (test_rank == VICTIM) {
    /* Let the peers read the last bytes of the allreduce first: a process that dies with
     * unread data makes its kernel reset the connections, which may discard what the peers
     * had not read yet, failing the first allreduce instead of the second. */
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    kill(getpid(), SIGKILL);
  }

  /* Rank 0 sees it through a work handle, the others through the blocking call. */
  start = now_s();
  if (test_rank == 0) {
    gloo_lite_work_t* work = NULL;
    gloo_lite_result_t status = GLOO_LITE_SUCCESS;
    const char* message = NULL;
    if (!EXPECT_OK(gloo_lite_iallreduce(ctx, data, data, 16, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL,
                                        &work))) {
      return 1;
    }
    result = gloo_lite_work_wait(work, GLOO_LITE_WAIT_FOREVER);
    elapsed = now_s() - start;
    snprintf(why, sizeof(why), "%s", gloo_lite_last_error());
    EXPECT_OK(gloo_lite_work_error(work, &status, &message));
    CHECK(status == result && message != NULL && message[0] != '\0');
    gloo_lite_work_free(work);
  } else {
    result = gloo_lite_allreduce(ctx, data, data, 16, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL);
    elapsed = now_s() - start;
    snprintf(why, sizeof(why), "%s", gloo_lite_last_error());
  }
  EXPECT_RESULT(GLOO_LITE_ERR_CONNECTION, result);
  CHECK(why[0] != '\0');
  CHECK(elapsed < TIMEOUT_MS / 1000.0 / 2);
  fprintf(stderr, "rank %d: after the kill: %s in %.3f s: %s\n", test_rank,
          gloo_lite_result_name(result), elapsed, why);
  /* The context stays failed: the next call reports it at once. */
  CHECK(gloo_lite_barrier(ctx, NULL) != GLOO_LITE_SUCCESS);
  EXPECT_OK(gloo_lite_destroy(ctx));
  return test_failures == 0 ? 0 : 1;
}

int run_killed_peer(void) {
  char dir[] = "/tmp/gloo_lite_c_api_XXXXXX";
  char store_url[64];
  pid_t children[RANKS];
  int rank, failed = 0;
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(store_url, sizeof(store_url), "file://%s", dir);
  fflush(NULL);
  for (rank = 0; rank < RANKS; ++rank) {
    children[rank] = fork();
    if (children[rank] < 0) {
      perror("fork");
      return 1;
    }
    if (children[rank] == 0) {
      test_rank = rank;
      _exit(run_rank(store_url));
    }
  }
  for (rank = 0; rank < RANKS; ++rank) {
    int status = 0;
    if (waitpid(children[rank], &status, 0) < 0) {
      perror("waitpid");
      return 1;
    }
    if (rank == VICTIM) {
      if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
        fprintf(stderr, "rank %d should have died by SIGKILL (status 0x%x)\n", rank, status);
        failed = 1;
      }
    } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", rank, status);
      failed = 1;
    }
  }
  /* The file store's keys: a few small files under dir; leave nothing behind. */
  {
    char command[128];
    snprintf(command, sizeof(command), "rm -rf '%s'", dir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return failed;
}
