// How every waiter of gloo_lite waits (docs/transport.md, Waiting policy): the TCP transport on
// its sockets, the shared-memory transport on its doorbell, the ibverbs transport on its
// completion queue, the shared-memory collectives on a peer's flag. One wait has three phases:
//  1. poll the caller's readiness check back to back (with a CPU pause) while every rank of
//     this host has a core: a peer's message or flag usually comes within microseconds, and the
//     wake-up a poll saves (scheduler latency) is most of its cost;
//  2. when ranks outnumber cores, sched_yield between the checks instead: the peer we wait for
//     may need this very CPU to send;
//  3. sleep once on the caller's blocking primitive (poll() for sockets, a futex for shared
//     memory), until a deadline the caller bounds by its slices (liveness, aborts).
// Phases 1 and 2 last at most the budget, which adapts to how the last waits went, within a
// bound (the caller's knob, or its defaults for the host's load): short waits keep it at the
// bound, long ones (a slow peer, an idle phase) halve it towards 0, so a rank blocked for long
// burns at most one bounded poll and then sleeps. Never an unbounded busy spin. (The budget
// counts from the first clock read, after a few quick checks: see kQuickChecks.)
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite {

// The polling bound a caller asks for, by the host's load.
struct WaitBounds {
  std::chrono::microseconds free_core;    // every local rank has a core: poll this long
  std::chrono::microseconds shared_core;  // ranks outnumber cores: yield between checks this long
};
// What the TCP and shared-memory transports and the shared-memory collectives start from (the
// TCP transport's GLOO_LITE_SPIN_US and the shared-memory transport's GLOO_LITE_SHM_SPIN_US
// override parts of it). The ibverbs transport polls only when asked (GLOO_LITE_IB_SPIN_US,
// GLOO_LITE_IB_BUSY_POLL): each look at its CQ takes the mesh mutex. One bound per transport,
// not one for all: a check costs a poll() call, a cache line or a CQ poll under a mutex, and a
// mixed mesh waits on two transports at once.
constexpr WaitBounds kDefaultWaitBounds{std::chrono::microseconds(50),
                                        std::chrono::microseconds(100)};

class WaitPolicy {
 public:
  using Micros = std::chrono::microseconds;

  // The bound and the manner of polling. `limit` 0 never polls. `yield`: sched_yield between
  // checks, so that a rank that shares its core lets the peer it waits for run.
  void configure(Micros limit, bool yield);
  // For a host with `ranks_per_core` ranks per usable CPU: bounds.free_core polling without
  // yields at most one rank per core, bounds.shared_core yielding above.
  void configure_for(double ranks_per_core, const WaitBounds& bounds);

  // How long the next wait may poll before it sleeps; 0: sleep at once.
  Micros budget() const { return budget_; }
  bool yields() const { return yield_; }
  Micros limit() const { return limit_; }

  // Adapts the budget to how the last wait went: it ended while polling (`caught`), or after
  // `waited` in all (polls and sleep). A wait that polling caught, or that polling up to the
  // limit would have caught, grows the budget (doubling, towards the limit); one longer than
  // the limit halves it.
  void record(bool caught, std::chrono::nanoseconds waited);

  // One wait: polls `ready()` (true: done) for the budget, then calls `sleep(until)` once,
  // which blocks on the caller's primitive no later than `until` and returns whether it is
  // ready now. Returns whether it is ready; false: look at deadlines, aborts and peers, then
  // wait again. Does not check ready() before polling: callers look first (cheaply).
  template <typename Ready, typename Sleep>
  bool wait(Ready&& ready, Sleep&& sleep, const Deadline& until) {
    // A few checks before the first clock read: a flag that comes within them (the common
    // case of an 8-byte shared-memory call, where each clock read costs about as much as the
    // cache-line transfer awaited) costs no clock read at all. Not when yielding: a yield may
    // give the core away for long, so each one is followed by a look at the clock.
    if (budget_.count() > 0 && !yield_) {
      for (int i = 0; i < kQuickChecks; ++i) {
        cpu_relax();
        if (ready()) {
          record(true, std::chrono::nanoseconds(0));
          return true;
        }
      }
    }
    const auto start = Deadline::Clock::now();
    bool caught = false;
    if (budget_.count() > 0) {
      const auto stop = std::min(start + budget_, until.time_point());
      // Polling reads the clock once per kChecksPerClockRead checks: a read costs about as
      // much as a pause, and a flag that lands during one is seen only after it. A yield gives
      // the core away for an unknown time, so yielding reads it after each.
      const int checks_per_read = yield_ ? 1 : kChecksPerClockRead;
      do {
        for (int i = 0; i < checks_per_read && !caught; ++i) {
          if (yield_) {
            sched_yield();
          } else {
            cpu_relax();
          }
          caught = ready();
        }
      } while (!caught && Deadline::Clock::now() < stop);
    }
    const bool done = caught || sleep(until);
    // record() reads the duration only of a wait that polling did not catch: no clock read
    // for one it did.
    record(caught, caught ? std::chrono::nanoseconds(0) : Deadline::Clock::now() - start);
    return done;
  }

  // A limit no wait reaches: polling goes on until the caller's `until` (a transport's
  // busy-poll switch, GLOO_LITE_IB_BUSY_POLL). Far below what a time point can add.
  static constexpr Micros kWholeWait = std::chrono::hours(24);
  // Where a budget that fell to 0 restarts when short waits come back.
  static constexpr Micros kRestart{4};
  // Checks before the clock is first read (see wait()); a few pauses, far below kRestart even
  // where ready() is a poll() system call.
  static constexpr int kQuickChecks = 8;
  // Checks between clock reads while polling: a few pauses (tens of nanoseconds each) on a
  // flag in shared memory, a few poll() calls (microseconds) on sockets; below any budget.
  static constexpr int kChecksPerClockRead = 8;

 private:
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  Micros limit_{0};
  Micros budget_{0};
  bool yield_ = false;
};

}  // namespace gloo_lite
