// Which process a resource was made in, told apart cheaply. A child of fork() inherits its
// parent's sockets, shared-memory mappings and objects, but none of its threads: an object that
// owns such resources must neither be used there (its peers would take the child for the
// parent) nor be torn down with a protocol (a goodbye or shutdown() reaches the parent's peers,
// an unlinked name or a write into a shared segment changes the parent's state).
//
// A pthread_atfork child handler counts forks, so that asking "was I made in this process?"
// costs one relaxed load per call instead of a getpid() system call.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace gloo_lite {

namespace detail {
extern std::atomic<uint64_t> g_fork_generation;
}

// Starts counting forks (once per process; idempotent and thread-safe). Call it before the
// first fork_generation() that an object keeps.
void count_forks();

// The number of forks between the first process that called count_forks() and this one: an
// object that keeps the value it was made under was made in another process once it differs.
inline uint64_t fork_generation() {
  return detail::g_fork_generation.load(std::memory_order_relaxed);
}

// The message of `call` (the operation and what it was made on: "allreduce on context 3f2a...
// (rank 0 of 2)") in a forked child, of something created in process `creator_pid`.
std::string forked_child_message(const std::string& call, int creator_pid);

}  // namespace gloo_lite
