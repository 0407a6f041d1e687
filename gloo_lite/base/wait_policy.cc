#include "gloo_lite/base/wait_policy.h"

#include <algorithm>

namespace gloo_lite {

void WaitPolicy::configure(Micros limit, bool yield) {
  limit_ = std::max(limit, Micros(0));
  budget_ = limit_;  // start optimistic: the first waits of a job are the handshake's
  yield_ = yield;
}

void WaitPolicy::configure_for(double ranks_per_core, const WaitBounds& bounds) {
  bool shared = ranks_per_core > 1.0;
  configure(shared ? bounds.shared_core : bounds.free_core, shared);
}

void WaitPolicy::record(bool caught, std::chrono::nanoseconds waited) {
  if (limit_.count() == 0) return;
  if (caught || waited <= limit_) {
    budget_ = std::min(limit_, std::max(kRestart, budget_ * 2));
  } else {
    budget_ /= 2;  // reaches 0 after a handful of long waits
  }
}

}  // namespace gloo_lite
