// The security test binary doubles as a rank program: `security_tests --rank-program DIR` is
// what the launcher tests start under gloo_lite_run. Each rank writes the secret it was given
// to DIR/secret.<rank> (0600) for the test to compare, runs an allreduce, and rank 0 checks that
// a store client without the secret is refused by the launcher's store.
// `security_tests --connect-time N` (under gloo_lite_run) prints, on rank 0, how long
// init_from_env took (store connection, rendezvous, mesh) and the median of N more contexts
// created on the same store: the handshake's cost, for docs/security.md.
// `security_tests --file-store-rank DIR RANK`: one of 2 ranks on a file store in DIR, an
// allreduce over the TCP transport; a fresh process, so GLOO_LITE_LOG applies (the level is
// read once per process).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/context_engine.h"
#include "rendezvous/store.h"
#include "rendezvous/stores.h"
#include "test/security/security_support.h"

namespace {

int rank_program(const std::string& dir) {
  const char* secret = std::getenv("GLOO_LITE_AUTH_SECRET");
  std::string rank = std::getenv("GLOO_LITE_RANK");
  std::string path = dir + "/secret." + rank;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 3;
  std::string text = secret == nullptr ? "(none)" : secret;
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return 3;
  ::close(fd);
  auto context = gloo_lite::init_from_env();
  std::vector<int32_t> value{context->rank() + 1};
  gloo_lite::allreduce(*context, value);
  std::printf("sum %d\n", value[0]);
  if (context->rank() == 0 && secret != nullptr) {
    std::string url = std::getenv("GLOO_LITE_STORE");
    unsetenv("GLOO_LITE_AUTH_SECRET");
    try {
      gloo_lite::open_store(url, gloo_lite::Deadline::after(std::chrono::seconds(10)));
      std::printf("outsider admitted\n");
    } catch (const gloo_lite::StoreError&) {
      std::printf("outsider refused\n");
    }
  }
  std::fflush(stdout);
  return 0;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int connect_time(int contexts) {
  auto start = std::chrono::steady_clock::now();
  auto first = gloo_lite::init_from_env();
  double init_ms = ms_since(start);
  std::vector<double> times;
  for (int i = 0; i < contexts; ++i) {
    gloo_lite::barrier(*first);  // every rank starts the next context together
    start = std::chrono::steady_clock::now();
    auto context = gloo_lite::Context::create(engine_of(*first).store(), first->rank(),
                                              first->size(), engine_of(*first).device());
    times.push_back(ms_since(start));
  }
  std::sort(times.begin(), times.end());
  if (first->rank() == 0) {
    std::printf("init_from_env %.2f ms, context median %.2f ms (of %d), auth %s\n", init_ms,
                times.empty() ? 0.0 : times[times.size() / 2], contexts,
                std::getenv("GLOO_LITE_AUTH_SECRET") ? "on" : "off");
  }
  return 0;
}

int file_store_rank(const std::string& dir, int rank) {
  auto store = gloo_lite::make_file_store(dir);
  auto context = gloo_lite::Context::create(store, rank, 2, gloo_lite::test::tcp_loopback_device());
  std::vector<int32_t> value{rank + 1};
  gloo_lite::allreduce(*context, value);
  std::printf("sum %d\n", value[0]);
  return value[0] == 3 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--rank-program") == 0) {
    try {
      return rank_program(argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank program: %s\n", e.what());
      return 1;
    }
  }
  if (argc == 3 && std::strcmp(argv[1], "--connect-time") == 0) {
    return connect_time(std::atoi(argv[2]));
  }
  if (argc == 4 && std::strcmp(argv[1], "--file-store-rank") == 0) {
    try {
      return file_store_rank(argv[2], std::atoi(argv[3]));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank program: %s\n", e.what());
      return 1;
    }
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
