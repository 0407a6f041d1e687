// The one retry/backoff helper: stores polling for a key, clients reconnecting to a store
// server, transports retrying a refused connect. Doubling from `initial` up to `cap`, never
// sleeping past the deadline, so waiting costs few wake-ups instead of a 10 ms busy loop.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite {

class Backoff {
 public:
  explicit Backoff(std::chrono::microseconds initial = std::chrono::microseconds(500),
                   std::chrono::microseconds cap = std::chrono::milliseconds(100))
      : next_(initial), cap_(cap) {}

  // The next pause, clipped to what is left of the deadline.
  std::chrono::microseconds next(const Deadline& deadline) {
    auto pause = next_;
    next_ = std::min(cap_, next_ * 2);
    if (!deadline.is_never()) {
      pause = std::min<std::chrono::microseconds>(pause, deadline.remaining());
    }
    return pause;
  }
  // Sleeps for the next pause; returns false when the deadline has already passed.
  bool sleep(const Deadline& deadline) {
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(next(deadline));
    return true;
  }

 private:
  std::chrono::microseconds next_;
  std::chrono::microseconds cap_;
};

}  // namespace gloo_lite
