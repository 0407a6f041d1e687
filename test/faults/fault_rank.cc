// fault_rank: the rank program the fault tests start (test/faults/run_faults.sh,
// test/netns/link_cut_test.sh), under gloo_lite_run or by hand with GLOO_LITE_* set.
//
//   fault_rank loop BYTES SECONDS [allreduce|broadcast]  repeat the collective, verifying each
//                                                        result, until rank 0 has run SECONDS
//   fault_rank mismatch count|dtype|root                 rank 1 disagrees with the others
//   fault_rank sendrecv SEND_BYTES RECV_BYTES            rank 0 sends, rank 1 posts a receive
//   fault_rank once                                      one verified allreduce
//   fault_rank two-contexts                              a second init_from_env while the first
//                                                        lives, then allreduces on both
//   fault_rank huge-count                                allreduce of 2^62 floats on a small
//                                                        buffer (the byte size overflows)
//   fault_rank throwing-reduction                        a custom reduction that throws on rank 1
//   fault_rank same-tag-threads                          two threads, 200 allreduces each, on
//                                                        one context and tag at once
//
// Every rank prints, flushed, "fault_rank rank=R ready t_ms=T" once connected and exactly one
// final line "fault_rank rank=R result=ok|wrong|error t_ms=T iterations=N type=TYPE what=TEXT"
// (type and what only for errors; TEXT is the first line of the message). t_ms is wall-clock
// milliseconds since the epoch, so that a harness can measure from the moment it injected a
// fault to the moment each rank failed. Exit status: 0 ok, 1 wrong result, 3 a gloo_lite error,
// 4 any other exception, 2 bad command line.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"

namespace {

using gloo_lite::Context;

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int g_rank = -1;  // from the environment until a context exists, for the final line
int g_iterations = 0;
// The context outlives the mode's function, so that the final line is printed when the error
// reaches the caller, before closing the context (which may itself take time) begins.
std::shared_ptr<Context> g_context;

void print_ready() {
  std::printf("fault_rank rank=%d ready t_ms=%lld\n", g_rank, now_ms());
  std::fflush(stdout);
}

int finish(const char* result, const char* type = nullptr, const char* what = nullptr) {
  std::string text = what ? what : "";
  text = text.substr(0, text.find('\n'));
  if (type) {
    std::printf("fault_rank rank=%d result=%s t_ms=%lld iterations=%d type=%s what=%s\n", g_rank,
                result, now_ms(), g_iterations, type, text.c_str());
  } else {
    std::printf("fault_rank rank=%d result=%s t_ms=%lld iterations=%d\n", g_rank, result, now_ms(),
                g_iterations);
  }
  std::fflush(stdout);
  if (type) return std::strcmp(type, "std::exception") == 0 ? 4 : 3;
  return std::strcmp(result, "ok") == 0 ? 0 : 1;
}

std::shared_ptr<Context> connect() {
  g_context = gloo_lite::init_from_env();
  g_rank = g_context->rank();
  print_ready();
  return g_context;
}

// Fills with rank + 1 so that the sum over P ranks is P(P+1)/2 in every element: an exact
// float for any P this harness uses.
bool verified_allreduce(Context& context, std::vector<float>& data,
                        const gloo_lite::CollectiveOptions& options = {}) {
  std::fill(data.begin(), data.end(), static_cast<float>(context.rank() + 1));
  gloo_lite::allreduce(context, data, gloo_lite::ReduceOp::kSum, options);
  float expected = context.size() * (context.size() + 1) / 2.0f;
  for (float value : data) {
    if (value != expected) return false;
  }
  return true;
}

bool verified_broadcast(Context& context, std::vector<float>& data, int iteration) {
  float root_value = static_cast<float>(iteration % 1000 + 1);
  std::fill(data.begin(), data.end(), context.rank() == 0 ? root_value : -1.0f);
  gloo_lite::broadcast(context, data, 0);
  for (float value : data) {
    if (value != root_value) return false;
  }
  return true;
}

int run_loop(size_t bytes, double seconds, const std::string& collective) {
  auto context = connect();
  std::vector<float> data(bytes / sizeof(float));
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    bool ok = collective == "broadcast" ? verified_broadcast(*context, data, g_iterations)
                                        : verified_allreduce(*context, data);
    if (!ok) return finish("wrong");
    ++g_iterations;
    // Rank 0 alone decides when to stop, so that every rank runs the same number of calls.
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    int go_on = elapsed.count() < seconds ? 1 : 0;
    gloo_lite::broadcast(*context, &go_on, 1, gloo_lite::DataType::kInt32, 0);
    if (!go_on) return finish("ok");
  }
}

// Rank 1 disagrees: count 1000 instead of 2000, int32 instead of float32, or root 1 instead
// of root 0. result=ok means this rank's output matches what its own arguments promise.
int run_mismatch(const std::string& kind) {
  auto context = connect();
  bool odd_one = context->rank() == 1;
  std::vector<float> data(2000, static_cast<float>(context->rank() + 1));
  float sum = context->size() * (context->size() + 1) / 2.0f;
  bool ok = true;
  if (kind == "count") {
    size_t count = odd_one ? 1000 : 2000;
    gloo_lite::allreduce(*context, data.data(), data.data(), count, gloo_lite::DataType::kFloat32,
                         gloo_lite::ReduceOp::kSum);
    for (size_t i = 0; i < count; ++i) ok = ok && data[i] == sum;
  } else if (kind == "dtype") {
    auto type = odd_one ? gloo_lite::DataType::kInt32 : gloo_lite::DataType::kFloat32;
    std::vector<int32_t> ints(2000, context->rank() + 1);
    void* buffer = odd_one ? static_cast<void*>(ints.data()) : static_cast<void*>(data.data());
    gloo_lite::allreduce(*context, buffer, buffer, 2000, type, gloo_lite::ReduceOp::kSum);
    for (size_t i = 0; i < 2000; ++i) {
      ok = ok && (odd_one ? ints[i] == static_cast<int32_t>(sum) : data[i] == sum);
    }
  } else if (kind == "root") {
    int root = odd_one ? 1 : 0;
    for (auto& value : data) value = context->rank() == root ? 100.0f + root : -1.0f;
    gloo_lite::broadcast(*context, data, root);
    for (float value : data) ok = ok && value == 100.0f + root;
  } else {
    std::fprintf(stderr, "fault_rank: unknown mismatch '%s'\n", kind.c_str());
    return 2;
  }
  g_iterations = 1;
  // Stay in the context until every rank is done, as a program with more work would: a rank
  // whose own part of a mismatched call happened to complete still learns of the mismatch
  // (over shared memory the sends complete before the odd rank even looks).
  try {
    gloo_lite::barrier(*context);
  } catch (const gloo_lite::Error&) {
    if (ok) throw;  // a wrong result is the finding; an error after it would hide it
  }
  return finish(ok ? "ok" : "wrong");
}

// Rank 0 sends send_bytes, rank 1 posts a receive of recv_bytes; the others only connect.
int run_sendrecv(size_t send_bytes, size_t recv_bytes) {
  auto context = connect();
  std::vector<uint8_t> buffer(std::max(send_bytes, recv_bytes), 0);
  if (context->rank() == 0) {
    for (size_t i = 0; i < send_bytes; ++i) buffer[i] = static_cast<uint8_t>(i * 7 + 1);
    context->send(1, buffer.data(), send_bytes, 42);
  } else if (context->rank() == 1) {
    context->recv(0, buffer.data(), recv_bytes, 42);
    for (size_t i = 0; i < std::min(send_bytes, recv_bytes); ++i) {
      if (buffer[i] != static_cast<uint8_t>(i * 7 + 1)) return finish("wrong");
    }
  }
  g_iterations = 1;
  // Keep every rank alive until both ends are done, so a failure is not masked by a goodbye.
  gloo_lite::barrier(*context);
  return finish("ok");
}

int run_once() {
  auto context = connect();
  std::vector<float> data(1 << 16);
  bool ok = verified_allreduce(*context, data);
  g_iterations = 1;
  return finish(ok ? "ok" : "wrong");
}

// The first context is used before the second is made, and rank r asks for the second
// (P - 1 - r) * 200 ms after the last rank: the ranks that connect to lower ranks come first,
// and must not take a slow rank's address from the first context.
int run_two_contexts() {
  auto first = connect();
  std::vector<float> data(1 << 10);
  bool ok = verified_allreduce(*first, data);
  std::this_thread::sleep_for(std::chrono::milliseconds(200 * (first->size() - 1 - first->rank())));
  auto second = gloo_lite::init_from_env();
  ok = verified_allreduce(*second, data) && ok && verified_allreduce(*first, data);
  g_iterations = 3;
  return finish(ok ? "ok" : "wrong");
}

// A count whose byte size overflows size_t: the buffer holds 16 floats, the call claims 2^62.
int run_huge_count() {
  auto context = connect();
  std::vector<float> data(16, 1.0f);
  size_t count = size_t{1} << 62;
  gloo_lite::allreduce(*context, data.data(), data.data(), count, gloo_lite::DataType::kFloat32,
                       gloo_lite::ReduceOp::kSum);
  g_iterations = 1;
  // Returning at all is wrong: no rank can have reduced 2^62 elements.
  return finish("wrong");
}

int run_throwing_reduction() {
  auto context = connect();
  std::vector<float> data(1 << 16, 1.0f);
  gloo_lite::CollectiveOptions options;
  int rank = context->rank();
  options.custom = [rank](void* inout, const void* in, size_t count) {
    if (rank == 1) throw std::runtime_error("user reduction refused its input on rank 1");
    auto* out = static_cast<float*>(inout);
    const auto* add = static_cast<const float*>(in);
    for (size_t i = 0; i < count; ++i) out[i] += add[i];
  };
  gloo_lite::allreduce(*context, data.data(), data.data(), data.size(),
                       gloo_lite::DataType::kFloat32, gloo_lite::ReduceOp::kCustom, options);
  g_iterations = 1;
  return finish("ok");
}

// Two threads on one tag at once: either the library serialises them (every result right) or
// it refuses; wrong sums with no error are the failure this looks for.
int run_same_tag_threads() {
  auto context = connect();
  constexpr int kCalls = 200;
  bool ok[2] = {true, true};
  std::string errors[2];
  auto work = [&](int thread) {
    try {
      std::vector<float> data(1 << 16);
      for (int i = 0; i < kCalls; ++i)
        ok[thread] = verified_allreduce(*context, data) && ok[thread];
    } catch (const std::exception& e) {
      errors[thread] = e.what();
    }
  };
  std::thread first(work, 0);
  std::thread second(work, 1);
  first.join();
  second.join();
  g_iterations = 2 * kCalls;
  if (!errors[0].empty() || !errors[1].empty()) {
    return finish("error", "Error", (errors[0].empty() ? errors[1] : errors[0]).c_str());
  }
  return finish(ok[0] && ok[1] ? "ok" : "wrong");
}

int usage() {
  std::fprintf(stderr,
               "usage: fault_rank loop BYTES SECONDS [allreduce|broadcast] | mismatch "
               "count|dtype|root | sendrecv SEND RECV | once | two-contexts | huge-count | "
               "throwing-reduction | same-tag-threads\n");
  return 2;
}

int dispatch(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "loop" && (argc == 4 || argc == 5)) {
    return run_loop(std::strtoull(argv[2], nullptr, 10), std::atof(argv[3]),
                    argc == 5 ? argv[4] : "allreduce");
  }
  if (mode == "mismatch" && argc == 3) return run_mismatch(argv[2]);
  if (mode == "sendrecv" && argc == 4) {
    return run_sendrecv(std::strtoull(argv[2], nullptr, 10), std::strtoull(argv[3], nullptr, 10));
  }
  if (mode == "once" && argc == 2) return run_once();
  if (mode == "two-contexts" && argc == 2) return run_two_contexts();
  if (mode == "huge-count" && argc == 2) return run_huge_count();
  if (mode == "throwing-reduction" && argc == 2) return run_throwing_reduction();
  if (mode == "same-tag-threads" && argc == 2) return run_same_tag_threads();
  return usage();
}

// Runs the mode; the final line is printed before the context closes.
int run(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const gloo_lite::TimeoutError& e) {
    return finish("error", "TimeoutError", e.what());
  } catch (const gloo_lite::ConnectionError& e) {
    return finish("error", "ConnectionError", e.what());
  } catch (const gloo_lite::MismatchError& e) {
    return finish("error", "MismatchError", e.what());
  } catch (const gloo_lite::InvalidArgument& e) {
    return finish("error", "InvalidArgument", e.what());
  } catch (const gloo_lite::StoreError& e) {
    return finish("error", "StoreError", e.what());
  } catch (const gloo_lite::Error& e) {
    return finish("error", "Error", e.what());
  } catch (const std::exception& e) {
    return finish("error", "std::exception", e.what());
  }
}

}  // namespace

// After the final line: close the context and say when that was done ("closed"), so that a
// slow close shows up separately from the time to the error.
int main(int argc, char** argv) {
  if (const char* rank = std::getenv("GLOO_LITE_RANK")) g_rank = std::atoi(rank);
  int status = run(argc, argv);
  if (g_context) {
    try {
      g_context.reset();
    } catch (const std::exception& e) {
      std::printf("fault_rank rank=%d close threw: %s\n", g_rank, e.what());
    }
    std::printf("fault_rank rank=%d closed t_ms=%lld\n", g_rank, now_ms());
  }
  return status;
}
