// Waiting for a 64-bit word in shared memory (across processes) to reach a value, without an
// unbounded busy spin: poll briefly when the host has a core to spare, yield the CPU when ranks
// outnumber cores, then sleep on a futex. The writer wakes sleepers only when one announced
// itself, so a publish costs a store and one load in the common case.
#pragma once

#include <atomic>
#include <cstdint>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite {

// A published counter and the number of processes sleeping on it, on one cache line of its
// own. Lives in shared memory (zero-filled memory is a valid SharedWord at 0).
struct alignas(64) SharedWord {
  std::atomic<uint64_t> value{0};
  std::atomic<uint32_t> sleepers{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared words must be lock-free");
static_assert(sizeof(SharedWord) == 64, "one cache line per word");

// How a waiter spends the time before it sleeps.
struct WaitPolicy {
  int spin_polls = 0;  // polls (with a CPU pause) before yielding
  int yields = 0;      // sched_yield rounds before sleeping
  // For a host with `ranks_per_core` ranks per usable CPU: poll for some microseconds when
  // every rank has its core, yield a few times when they share.
  static WaitPolicy for_load(double ranks_per_core);
};

// Stores `value` (a release, sequentially consistent) and wakes the sleepers, if any.
void publish(SharedWord& word, uint64_t value);
// Wakes every sleeper of `word` without changing it (to make waiters look at something else,
// such as an abort flag).
void wake_all(SharedWord& word);

// One wait for `word` to reach at least `target`, in rounds: each call of wait() returns true
// once it did, or false after the spin and yield phases (first call only) and then one sleep
// that ended by a wake-up, a spurious return or `until`, so that the caller can look at aborts,
// dead peers and its deadline between rounds.
class SpinWaiter {
 public:
  SpinWaiter(SharedWord& word, uint64_t target, const WaitPolicy& policy)
      : word_(word), target_(target), policy_(policy) {}
  bool reached() const { return word_.value.load(std::memory_order_acquire) >= target_; }
  bool wait(const Deadline& until);

 private:
  SharedWord& word_;
  uint64_t target_;
  WaitPolicy policy_;
  bool spun_ = false;
};

}  // namespace gloo_lite
