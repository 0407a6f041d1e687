// Point-to-point ping-pong between ranks 0 and 1: latency and bandwidth per message size.
//   gloo_lite_run -n 2 -- ./gloo_lite_pingpong [-b 8] [-e 64M] [-f 2] [-n iters] [-w warmup]
// Sizes and flags follow nccl-tests. Time is per one-way trip (half a round trip);
// bandwidth is bytes / one-way time, GB = 1e9.
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/context_engine.h"

namespace {

struct Options {
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64ull << 20;
  uint64_t factor = 2;
  int iterations = 0;  // 0: scale with size
  int warmup = 5;
};

Options parse(int argc, char** argv) {
  Options options;
  int c;
  while ((c = getopt(argc, argv, "b:e:f:n:w:h")) != -1) {
    switch (c) {
      case 'b':
        options.min_bytes = gloo_lite::parse_bytes(optarg, "-b");
        break;
      case 'e':
        options.max_bytes = gloo_lite::parse_bytes(optarg, "-e");
        break;
      case 'f':
        options.factor = std::max<uint64_t>(2, std::strtoull(optarg, nullptr, 10));
        break;
      case 'n':
        options.iterations = std::atoi(optarg);
        break;
      case 'w':
        options.warmup = std::atoi(optarg);
        break;
      default:
        std::fprintf(stderr,
                     "usage: gloo_lite_pingpong [-b min] [-e max] [-f factor] "
                     "[-n iters] [-w warmup]\n");
        std::exit(c == 'h' ? 0 : 2);
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  try {
    auto context = gloo_lite::init_from_env();
    if (context->size() < 2) throw gloo_lite::InvalidArgument("ping-pong needs 2 ranks");
    int rank = context->rank();
    auto& mesh = engine_of(*context).mesh();
    std::vector<uint8_t> buffer(options.max_bytes, static_cast<uint8_t>(rank));
    auto memory = mesh.register_memory(buffer.data(), buffer.size());
    if (rank == 0) {
      std::printf("# gloo_lite ping-pong, %s, 2 processes\n",
                  engine_of(*context).device()->name().c_str());
      std::printf("# %12s %10s %12s %12s\n", "size(B)", "iters", "time(us)", "bw(GB/s)");
    }
    for (uint64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
      int iterations =
          options.iterations
              ? options.iterations
              : static_cast<int>(std::clamp<uint64_t>((256ull << 20) / (bytes + 1), 20, 2000));
      double best_us = 1e30;
      for (int pass = 0; pass < 2; ++pass) {
        auto start = std::chrono::steady_clock::now();
        int count = pass == 0 ? options.warmup : iterations;
        for (int i = 0; i < count && rank < 2; ++i) {
          if (rank == 0) {
            mesh.wait({mesh.send(1, 0, *memory, 0, bytes)}, engine_of(*context).deadline());
            mesh.wait({mesh.recv(1, 0, *memory, 0, bytes)}, engine_of(*context).deadline());
          } else {
            mesh.wait({mesh.recv(0, 0, *memory, 0, bytes)}, engine_of(*context).deadline());
            mesh.wait({mesh.send(0, 0, *memory, 0, bytes)}, engine_of(*context).deadline());
          }
        }
        double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count();
        if (pass == 1) best_us = us / iterations / 2;
      }
      if (rank == 0) {
        std::printf("  %12llu %10d %12.2f %12.3f\n", static_cast<unsigned long long>(bytes),
                    iterations, best_us, bytes / best_us / 1e3);
        std::fflush(stdout);
      }
    }
    return 0;
  } catch (const gloo_lite::Error& e) {
    std::fprintf(stderr, "gloo_lite_pingpong: %s\n", e.what());
    return 1;
  }
}
