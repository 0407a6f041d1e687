/* The C consumer: the same greeting as consumer.cc, through the C ABI of an installed
 * libgloo_lite.so (found with find_package or pkg-config gloo_lite-c), plus an allreduce. */
#include <stdio.h>
#include <string.h>

#include "gloo_lite/gloo_lite.h"

static int failed(const char* what) {
  fprintf(stderr, "consumer: %s: %s\n", what, gloo_lite_last_error());
  return 1;
}

int main(void) {
  gloo_lite_context_t* ctx = NULL;
  char message[32] = {0};
  int rank = 0, size = 0, peer, ranks = 1;
  if (gloo_lite_init_from_env(0, &ctx) != GLOO_LITE_SUCCESS) return failed("init");
  gloo_lite_context_rank(ctx, &rank);
  gloo_lite_context_size(ctx, &size);
  if (gloo_lite_allreduce(ctx, &ranks, &ranks, 1, GLOO_LITE_INT32, GLOO_LITE_SUM, NULL) !=
          GLOO_LITE_SUCCESS ||
      ranks != size) {
    return failed("allreduce");
  }
  if (rank == 0) {
    for (peer = 1; peer < size; ++peer) {
      snprintf(message, sizeof(message), "hello rank %d", peer);
      if (gloo_lite_send(ctx, peer, message, sizeof(message), 1, 0) != GLOO_LITE_SUCCESS) {
        return failed("send");
      }
    }
    printf("consumer: rank 0 greeted %d ranks\n", size - 1);
  } else {
    if (gloo_lite_recv(ctx, 0, message, sizeof(message), 1, 0) != GLOO_LITE_SUCCESS) {
      return failed("recv");
    }
    printf("consumer: rank %d got '%s'\n", rank, message);
  }
  gloo_lite_destroy(ctx);
  return 0;
}
