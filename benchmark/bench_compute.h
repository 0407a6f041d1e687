// The caller's computation of `gloo_lite_bench --overlap MS`: a CPU-bound loop calibrated to take
// MS milliseconds on this rank. It has to keep a core busy for real: a sleep would leave the CPU
// to the library, and a loop over memory would also measure how the two share memory
// bandwidth, which is a second question. With --overlap-idle it is a sleep on purpose: the
// caller waits for something that needs no CPU (an accelerator's kernel, I/O), the case where
// a machine without a spare core per rank can still hide communication.
#pragma once

#include <cstdint>

namespace gloo_lite::bench {

class Compute {
 public:
  // Calibrates on this rank: the loop's length that takes `milliseconds` on an undisturbed core.
  explicit Compute(double milliseconds, bool idle = false);
  // Runs the calibrated loop: about `milliseconds` of CPU time on this thread (idle: sleeps
  // that long).
  void run() const;
  double milliseconds() const { return milliseconds_; }
  uint64_t steps() const { return steps_; }

 private:
  double milliseconds_;
  bool idle_;
  uint64_t steps_ = 0;  // dependent multiply-adds per run (0 when idle)
};

}  // namespace gloo_lite::bench
