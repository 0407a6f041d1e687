#include "gloo_lite/base/fork_generation.h"

#include <pthread.h>
#include <unistd.h>

#include <mutex>

namespace gloo_lite {

namespace detail {
std::atomic<uint64_t> g_fork_generation{0};
}

namespace {
// Runs in the child, single-threaded: an atomic increment is async-signal-safe.
void after_fork_in_child() { detail::g_fork_generation.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

std::string forked_child_message(const std::string& call, int creator_pid) {
  return call + " in process " + std::to_string(getpid()) +
         ": this context was created in process " + std::to_string(creator_pid) +
         "; a forked child cannot use it (its connections and shared memory are the parent's): "
         "create a new context in the child";
}

void count_forks() {
  static std::once_flag registered;
  std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
}

}  // namespace gloo_lite
