// A program outside the gloo_lite tree, built against an installed gloo_lite (find_package or
// pkg-config) and started with the installed gloo_lite_run: rank 0 greets every other rank.
#include <cstdio>
#include <cstring>
#include <exception>

#include "gloo_lite/bootstrap.h"

int main() {
  try {
    auto context = gloo_lite::init_from_env();
    char message[32] = {0};
    if (context->rank() == 0) {
      for (int peer = 1; peer < context->size(); ++peer) {
        std::snprintf(message, sizeof(message), "hello rank %d", peer);
        context->send(peer, message, sizeof(message), 1);
      }
      std::printf("consumer: rank 0 greeted %d ranks\n", context->size() - 1);
    } else {
      context->recv(0, message, sizeof(message), 1);
      std::printf("consumer: rank %d got '%s'\n", context->rank(), message);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
