// Non-blocking forms of every collective, driven by a Case (cases.h): start() calls the
// i<collective> function with inputs from the reference (reference.h) and buffers that the
// returned object owns until the work has finished; check() compares the result with the
// reference once it has. Several may be started before any is waited for.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gloo_lite/collectives.h"
#include "test/collectives/cases.h"
#include "test/collectives/guarded_buffer.h"

namespace gloo_lite::test {

class StartedCollective {
 public:
  // `barrier_entered` counts the ranks that entered an ibarrier of this case (shared by the
  // rank threads): a barrier whose wait returns before every rank entered it is wrong.
  static std::unique_ptr<StartedCollective> start(const Case& c, Context& context,
                                                  CollectiveOptions options,
                                                  std::atomic<int>& barrier_entered);

  const Case& which() const { return case_; }
  const Work& work() const { return work_; }
  // Call only after the work finished successfully.
  void check(Problems& problems) const { check_(problems); }

 private:
  explicit StartedCollective(const Case& c) : case_(c) {}

  Case case_;
  Work work_;
  std::vector<uint8_t> input_;
  std::vector<uint8_t> output_;
  std::function<void(Problems&)> check_;
};

}  // namespace gloo_lite::test
