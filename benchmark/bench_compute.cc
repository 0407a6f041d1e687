#include "bench_compute.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace gloo_lite::bench {
namespace {

// The loop's result goes here, so that the compiler cannot drop the loop.
volatile double sink = 0;

// A chain of `steps` multiply-adds, each needing the previous one's result: it runs at the
// floating-point latency of one core whatever the compiler does (without -ffast-math it may not
// reassociate the chain into independent lanes), touches no memory, and stays near 1.0 so that
// no denormals or infinities change its speed.
void multiply_add_chain(uint64_t steps) {
  double x = sink;
  for (uint64_t i = 0; i < steps; ++i) x = x * 0.999999 + 1e-6;
  sink = x;
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// The CPU time of this thread, not the wall clock: a trial that other processes preempt (ranks
// outnumber the cores, ctest runs tests side by side) would otherwise read slow, and the loop
// calibrated from it would run far shorter than asked once the machine is quiet.
double seconds_of(uint64_t steps) {
  double start = thread_cpu_seconds();
  multiply_add_chain(steps);
  return thread_cpu_seconds() - start;
}

}  // namespace

Compute::Compute(double milliseconds, bool idle) : milliseconds_(milliseconds), idle_(idle) {
  if (idle_) return;
  // Grow a trial until it is long enough to time (5 ms), then keep the fastest of five trials
  // of ~10 ms: the loop's speed on a core of its own. Other processes (or more ranks than
  // cores) only slow it down, and the benchmark measures the computation rather than trusting
  // this estimate, so the rate when undisturbed is the one that names "MS ms" best.
  uint64_t trial = 1 << 16;
  while (seconds_of(trial) < 5e-3) trial *= 2;
  trial *= 2;
  double fastest = 0;
  for (int i = 0; i < 5; ++i)
    fastest = std::max(fastest, static_cast<double>(trial) / seconds_of(trial));
  steps_ = std::max<uint64_t>(1, static_cast<uint64_t>(fastest * milliseconds * 1e-3));
}

void Compute::run() const {
  if (idle_) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(milliseconds_));
    return;
  }
  multiply_add_chain(steps_);
}

}  // namespace gloo_lite::bench
