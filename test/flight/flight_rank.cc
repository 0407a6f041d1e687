// The rank program of the flight recorder signal tests: N allreduces of 1024 int64 on
// init_from_env()'s context, each checked against its closed form. Before allreduce K every rank
// writes DIR/in.RANK (its pid), and rank LATE then waits for DIR/go, so that the others are
// blocked in allreduce K while the test sends its signals.
//   flight_rank DIR LATE K N
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"

namespace {

constexpr size_t kCount = 1024;

// Written whole under a temporary name, so that a waiting test never reads half of it.
void write_pid(const std::string& path) {
  {
    std::ofstream file(path + ".tmp");
    file << getpid() << "\n";
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

bool wait_for(const std::string& path, std::chrono::seconds bound) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  while (access(path.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: flight_rank DIR LATE K N\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int late = std::atoi(argv[2]);
  const int k = std::atoi(argv[3]);
  const int n = std::atoi(argv[4]);
  auto context = gloo_lite::init_from_env();
  const int rank = context->rank();
  const int64_t size = context->size();
  std::vector<int64_t> data(kCount);
  for (int i = 0; i < n; ++i) {
    if (i == k) {
      write_pid(dir + "/in." + std::to_string(rank));
      if (rank == late && !wait_for(dir + "/go", std::chrono::seconds(15))) {
        std::fprintf(stderr, "rank %d: no %s/go within 15 s\n", rank, dir.c_str());
        return 3;
      }
    }
    for (size_t j = 0; j < kCount; ++j) data[j] = (rank + 1) * (i + 1) + static_cast<int64_t>(j);
    gloo_lite::allreduce(*context, data);
    // sum over r of (r + 1) * (i + 1) + j
    for (size_t j = 0; j < kCount; ++j) {
      int64_t expected = (i + 1) * size * (size + 1) / 2 + size * static_cast<int64_t>(j);
      if (data[j] != expected) {
        std::fprintf(stderr, "rank %d: allreduce %d element %zu is %lld, expected %lld\n", rank, i,
                     j, static_cast<long long>(data[j]), static_cast<long long>(expected));
        return 1;
      }
    }
  }
  std::printf("rank %d: %d allreduces correct\n", rank, n);
  return 0;
}
