/* The C API at the edges of its integer arguments, on 2 ranks (run over shm and over tcp):
 * byte counts no buffer can hold are refused before any memory is touched; timeouts past the
 * clock's range mean no limit, and a negative wait is refused; a context of 10^5 ranks on a file
 * store fails by its deadline with a short message. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime, mkdtemp, opendir */

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* send/recv (both forms) of byte counts far beyond the 64-byte buffer: INVALID_ARGUMENT naming
 * the call, the peer and the count, and nothing consumed (a transfer of the right size works
 * afterwards). The receiver used to write the sender's memory past its buffer over shm. */
/* gloo_lite_work_wait(work, timeout_ms) refused, naming timeout_ms. */
#define EXPECT_INVALID_WAIT(work, timeout_ms)                                                   \
  do {                                                                                          \
    if (EXPECT_RESULT(GLOO_LITE_ERR_INVALID_ARGUMENT, gloo_lite_work_wait(work, timeout_ms))) { \
      CHECK(last_error_mentions("gloo_lite_work_wait", "timeout_ms"));                          \
    }                                                                                           \
  } while (0)

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

/* INT64_MAX milliseconds used to wrap the deadline into the past: calls failed at once with
 * "TimeoutError after 9223372036854775807 ms" (failing the context) and gloo_lite_work_wait
 * returned IN_PROGRESS at once. Now they wait as long as it takes. */
static void test_long_timeouts(gloo_lite_context_t* ctx, int rank) {
  int64_t value[4] = {rank, rank, rank, rank};
  const int peer = 1 - rank;
  gloo_lite_options_t options = GLOO_LITE_OPTIONS_INIT;
  gloo_lite_work_t* work = NULL;
  const struct timespec later = {0, 300 * 1000 * 1000};
  options.timeout_ms = INT64_MAX;
  EXPECT_OK(gloo_lite_allreduce(ctx, value, value, 4, GLOO_LITE_INT64, GLOO_LITE_SUM, &options));
  CHECK(value[0] == 1 && value[3] == 1);
  /* Rank 1 waits on its receive (posted before the barrier) with INT64_MAX; rank 0 sends 0.3 s
   * after the barrier, so a wait that gives up at once sees the receive still running. */
  if (rank == 1) EXPECT_OK(gloo_lite_irecv(ctx, peer, value, sizeof(value), 9, INT64_MAX, &work));
  EXPECT_OK(gloo_lite_barrier(ctx, NULL));
  if (rank == 0) {
    nanosleep(&later, NULL);
    value[0] = 77;
    EXPECT_OK(gloo_lite_send(ctx, peer, value, sizeof(value), 9, INT64_MAX));
    EXPECT_OK(gloo_lite_recv(ctx, peer, value, sizeof(value), 10, INT64_MAX));
    CHECK(value[0] == 78);
  } else if (work != NULL) {
    EXPECT_INVALID_WAIT(work, -5);
    EXPECT_OK(gloo_lite_work_wait(work, INT64_MAX));
    CHECK(value[0] == 77);
    EXPECT_OK(gloo_lite_work_wait(work, 0)); /* finished: polling says so */
    EXPECT_INVALID_WAIT(work, INT64_MIN);
    EXPECT_OK(gloo_lite_work_free(work));
    value[0] = 78;
    EXPECT_OK(gloo_lite_send(ctx, peer, value, sizeof(value), 10, 0));
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Removes the files of a flat directory (the file store's keys here are short: no
 * subdirectories) and the directory; returns how many files there were. */
static int remove_directory(const char* path) {
  char file[512];
  int files = 0;
  struct dirent* entry;
  DIR* dir = opendir(path);
  if (dir == NULL) return -1;
  while ((entry = readdir(dir)) != NULL) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    snprintf(file, sizeof(file), "%s/%s", path, entry->d_name);
    unlink(file);
    ++files;
  }
  closedir(dir);
  rmdir(path);
  return files;
}

/* Rank 0 alone of 100000 on a file store with a 1 s timeout: the rendezvous used to read (and
 * create) every peer's counter without looking at its deadline (14 s here), leave 2 files per
 * absent rank and list all 99999 in its error. Now: within a few seconds, a line naming
 * "ranks 1-99999", and only this rank's own keys left. */
static void test_many_ranks_on_a_file_store(void) {
  char directory[] = "/tmp/gloo_lite_limits_XXXXXX";
  char url[64];
  gloo_lite_context_t* ctx = NULL;
  double start, elapsed;
  int files;
  if (mkdtemp(directory) == NULL) {
    CHECK(!"mkdtemp");
    return;
  }
  snprintf(url, sizeof(url), "file://%s", directory);
  start = now_s();
  if (EXPECT_RESULT(GLOO_LITE_ERR_TIMEOUT, gloo_lite_init(url, NULL, 0, 100000, 1000, &ctx))) {
    /* "ranks 1-99999" (an en dash), or 1-N of the first N peers checked on a slow machine,
     * or, slower still (a sanitizer build), the timeout passed while reading the counters. */
    const char* error = gloo_lite_last_error();
    CHECK(strstr(error, "ranks 1\xe2\x80\x93") != NULL || strstr(error, "context counts") != NULL);
    CHECK(strlen(gloo_lite_last_error()) < 2000);
  }
  elapsed = now_s() - start;
  CHECK(elapsed < 5.0);
  files = remove_directory(directory);
  CHECK(files >= 0 && files <= 4);
  if (elapsed >= 5.0 || files > 4) {
    fprintf(stderr, "rank 0: gloo_lite_init of 100000 ranks took %.1f s and left %d files\n",
            elapsed, files);
  }
}

int run_limits(void) {
  gloo_lite_context_t* ctx = NULL;
  int rank = -1, size = 0;
  /* A context whose every deadline is INT64_MAX ms: its store wait used to fail at once. */
  if (!EXPECT_OK(gloo_lite_init_from_env(INT64_MAX, &ctx))) return 1;
  EXPECT_OK(gloo_lite_context_rank(ctx, &rank));
  EXPECT_OK(gloo_lite_context_size(ctx, &size));
  test_rank = rank;
  CHECK(size == 2);
  test_huge_byte_counts(ctx, rank);
  test_long_timeouts(ctx, rank);
  if (rank == 0) test_many_ranks_on_a_file_store();
  EXPECT_OK(gloo_lite_barrier(ctx, NULL));
  EXPECT_OK(gloo_lite_destroy(ctx));
  return 0;
}
