// A 64-bit word in shared memory (across processes) that waiters sleep on with a futex: the
// shared-memory collectives' sequence flags and the shared-memory transport's doorbell. The
// writer wakes sleepers only when one announced itself, so a publish costs a store (or an
// increment) and one load in the common case. How long to poll before sleeping on it is the
// WaitPolicy's business (gloo_lite/base/wait_policy.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite {

// A published counter and the number of processes sleeping on it. Lives in shared memory
// (zero-filled memory is a valid SharedWord at 0). Give it a cache line of its own (alignas(64)),
// or share that line only with words its waiters read as soon as it moves: they then come with
// the same transfer (the shared-memory collectives' flag line, gloo_lite/shm/segment_layout.h).
struct SharedWord {
  std::atomic<uint64_t> value{0};
  std::atomic<uint32_t> sleepers{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared words must be lock-free");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain words");
static_assert(sizeof(SharedWord) == 16, "two words");

// Stores `value` and wakes the sleepers, if any.
void publish(SharedWord& word, uint64_t value);
// Adds one (a doorbell that several writers ring) and wakes the sleepers, if any.
void ring(SharedWord& word);
// Wakes every sleeper without changing the word (to make waiters look at something else, such
// as an abort flag or a closed peer).
void wake_all(SharedWord& word);
// Sleeps while the word still holds `seen`, until a publish, a wake-up, `until` or `slice`,
// whichever comes first (spurious returns are possible). Returns whether the word changed.
bool sleep_while(SharedWord& word, uint64_t seen, const Deadline& until,
                 std::chrono::nanoseconds slice);

}  // namespace gloo_lite
