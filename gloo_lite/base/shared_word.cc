#include "gloo_lite/base/shared_word.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
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

}  // namespace

void publish(SharedWord& word, uint64_t value) {
  // Sequentially consistent store, then load of sleepers, paired with the sleeper's increment
  // of sleepers and re-read of the value (both seq_cst): either the sleeper sees the new value,
  // or this load sees the sleeper.
  word.value.store(value, std::memory_order_seq_cst);
  if (word.sleepers.load(std::memory_order_seq_cst) != 0) wake_all(word);
}

void ring(SharedWord& word) {
  // The same pairing as publish(), with an increment (several writers).
  word.value.fetch_add(1, std::memory_order_seq_cst);
  if (word.sleepers.load(std::memory_order_seq_cst) != 0) wake_all(word);
}

void wake_all(SharedWord& word) {
  // Not FUTEX_PRIVATE: the sleepers are in other processes.
  syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool sleep_while(SharedWord& word, uint64_t seen, const Deadline& until,
                 std::chrono::nanoseconds slice) {
  auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_point() -
                                                                   Deadline::Clock::now());
  if (until.is_never()) left = slice;
  left = std::clamp(left, std::chrono::nanoseconds(0), slice);
  if (left.count() == 0) return word.value.load(std::memory_order_acquire) != seen;
  word.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (word.value.load(std::memory_order_seq_cst) == seen) {
    timespec timeout{static_cast<time_t>(left.count() / 1'000'000'000),
                     static_cast<long>(left.count() % 1'000'000'000)};
    // Sleeps only while the low word still says `seen`: whatever was published since is not
    // lost.
    syscall(SYS_futex, futex_word(word), FUTEX_WAIT, static_cast<uint32_t>(seen), &timeout, nullptr,
            0);
  }
  word.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  return word.value.load(std::memory_order_acquire) != seen;
}

}  // namespace gloo_lite
