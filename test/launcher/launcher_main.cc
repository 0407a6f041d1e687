// The launcher test binary doubles as a rank program: `launcher_tests --rank-helper MODE ...`
// is what the tests start under gloo_lite_run.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/failure_report.h"
#include "rendezvous/stores.h"

namespace {

void write_in_pieces(int fd, const std::string& line) {
  // Three writes per line, yielding in between, so that lines of concurrent ranks would
  // interleave if the launcher passed bytes through instead of whole lines.
  size_t third = line.size() / 3;
  size_t cuts[] = {0, third, 2 * third, line.size()};
  for (int i = 0; i < 3; ++i) {
    size_t done = cuts[i];
    while (done < cuts[i + 1]) {
      ssize_t n = write(fd, line.data() + done, cuts[i + 1] - done);
      if (n <= 0) std::exit(3);
      done += static_cast<size_t>(n);
    }
    sched_yield();
  }
}

// lines COUNT LENGTH: COUNT lines of LENGTH letters ('a' + rank on stdout, 'A' + rank on
// stderr).
int helper_lines(int count, int length) {
  int rank = std::atoi(std::getenv("GLOO_LITE_RANK"));
  std::string out(static_cast<size_t>(length), static_cast<char>('a' + rank));
  std::string err(static_cast<size_t>(length), static_cast<char>('A' + rank));
  out += '\n';
  err += '\n';
  for (int i = 0; i < count; ++i) {
    write_in_pieces(1, out);
    write_in_pieces(2, err);
  }
  return 0;
}

// bootstrap: init_from_env, then pass each rank's number around the ring.
int helper_bootstrap() {
  auto context = gloo_lite::init_from_env();
  int rank = context->rank();
  int size = context->size();
  int right = (rank + 1) % size;
  int left = (rank + size - 1) % size;
  int sent = 1000 + rank;
  int received = -1;
  if (size > 1) {
    if (rank % 2 == 0) {
      context->send(right, &sent, sizeof(sent), 7);
      context->recv(left, &received, sizeof(received), 7);
    } else {
      context->recv(left, &received, sizeof(received), 7);
      context->send(right, &sent, sizeof(sent), 7);
    }
  } else {
    received = sent;
  }
  std::printf("rank %d of %d received %d from rank %d\n", rank, size, received, left);
  std::fflush(stdout);
  return received == 1000 + left ? 0 : 1;
}

// allreduce-loop DIR: init_from_env, one allreduce, DIR/pid.RANK written, then allreduces until
// one fails (a stopped peer makes that a time-out); checks every result.
int helper_allreduce_loop(const std::string& dir) {
  auto context = gloo_lite::init_from_env();
  int rank = context->rank();
  int size = context->size();
  std::vector<int> data(4, rank);
  gloo_lite::allreduce(*context, data);
  std::string file = dir + "/pid." + std::to_string(rank);
  FILE* out = std::fopen((file + ".tmp").c_str(), "w");
  if (out == nullptr) return 4;
  std::fprintf(out, "%d\n", static_cast<int>(getpid()));
  std::fclose(out);
  std::rename((file + ".tmp").c_str(), file.c_str());
  const int expected = size * (size - 1) / 2;
  for (;;) {
    for (int& value : data) value = rank;
    gloo_lite::allreduce(*context, data);
    for (int value : data) {
      if (value != expected) return 5;
    }
  }
}

// report REPORTER CULPRITS STATUS: rank REPORTER publishes a failure report naming CULPRITS
// (comma list, or - for none) in the job's store and exits STATUS; the others wait to be
// stopped.
int helper_report(int reporter, const std::string& culprits_text, int status) {
  int rank = std::atoi(std::getenv("GLOO_LITE_RANK"));
  if (rank != reporter) {
    for (;;) pause();
  }
  using namespace gloo_lite;
  std::shared_ptr<Store> store =
      open_store(knob_string("GLOO_LITE_STORE"), Deadline::after(std::chrono::seconds(10)));
  std::string prefix = knob_string("GLOO_LITE_PREFIX");
  if (!prefix.empty()) store = make_prefix_store(std::move(store), prefix);
  std::vector<int> culprits;
  for (size_t start = 0; culprits_text != "-" && start < culprits_text.size();) {
    culprits.push_back(std::atoi(culprits_text.c_str() + start));
    size_t comma = culprits_text.find(',', start);
    start = comma == std::string::npos ? culprits_text.size() : comma + 1;
  }
  publish_failure_report(*store, rank, culprits, "helper: pretending to time out",
                         Deadline::after(std::chrono::seconds(5)));
  return status;
}

int rank_helper(int argc, char** argv) {
  std::string mode = argc > 0 ? argv[0] : "";
  try {
    if (mode == "lines" && argc == 3) return helper_lines(std::atoi(argv[1]), std::atoi(argv[2]));
    if (mode == "bootstrap") return helper_bootstrap();
    if (mode == "allreduce-loop" && argc == 2) return helper_allreduce_loop(argv[1]);
    if (mode == "report" && argc == 4) {
      return helper_report(std::atoi(argv[1]), argv[2], std::atoi(argv[3]));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank helper %s failed: %s\n", mode.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown rank helper mode '%s'\n", mode.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--rank-helper") == 0) {
    return rank_helper(argc - 2, argv + 2);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
