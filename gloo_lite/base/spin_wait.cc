#include "gloo_lite/base/spin_wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>

namespace gloo_lite {
namespace {

// The futex is the low 32 bits of the counter: every publish changes them (a counter does not
// advance by 2^32 between a waiter's read and its sleep).
uint32_t* futex_word(SharedWord& word) {
  auto* base = reinterpret_cast<uint32_t*>(&word.value);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return base;
#else
  return base + 1;
#endif
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

WaitPolicy WaitPolicy::for_load(double ranks_per_core) {
  // About 20 us of polling (a pause is ~10-140 cycles depending on the CPU) when every rank
  // has its core: a peer's flag usually arrives within a few microseconds. Oversubscribed,
  // polling only steals the CPU the peer needs: yield a few times, then sleep.
  if (ranks_per_core <= 1.0) return WaitPolicy{4000, 4};
  return WaitPolicy{0, 16};
}

void publish(SharedWord& word, uint64_t value) {
  // Sequentially consistent store and load, paired with the waiter's sleepers increment and
  // re-read of the value: either the waiter sees the new value, or this load sees the waiter.
  // (Not a fence between weaker ones: ThreadSanitizer does not model fences.)
  word.value.store(value, std::memory_order_seq_cst);
  if (word.sleepers.load(std::memory_order_seq_cst) != 0) wake_all(word);
}

void wake_all(SharedWord& word) {
  // Not FUTEX_PRIVATE: the sleepers are in other processes.
  syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool SpinWaiter::wait(const Deadline& until) {
  if (reached()) return true;
  if (!spun_) {
    spun_ = true;
    for (int i = 0; i < policy_.spin_polls; ++i) {
      cpu_relax();
      if (reached()) return true;
    }
    for (int i = 0; i < policy_.yields; ++i) {
      sched_yield();
      if (reached()) return true;
    }
  }
  uint64_t seen = word_.value.load(std::memory_order_acquire);
  if (seen >= target_) return true;
  word_.sleepers.fetch_add(1, std::memory_order_seq_cst);
  seen = word_.value.load(std::memory_order_seq_cst);
  if (seen < target_) {
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_point() -
                                                                     Deadline::Clock::now());
    left = std::clamp(left, std::chrono::nanoseconds(0), std::chrono::nanoseconds(100'000'000));
    timespec timeout{static_cast<time_t>(left.count() / 1'000'000'000),
                     static_cast<long>(left.count() % 1'000'000'000)};
    if (left.count() > 0) {
      syscall(SYS_futex, futex_word(word_), FUTEX_WAIT, static_cast<uint32_t>(seen), &timeout,
              nullptr, 0);
    }
  }
  word_.sleepers.fetch_sub(1, std::memory_order_relaxed);
  return reached();
}

}  // namespace gloo_lite
