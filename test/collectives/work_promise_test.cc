// WorkPromise (gloo_lite/work.h): a Work that its maker finishes, as the CUDA communicator's
// staged calls are.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "gloo_lite/work.h"

namespace gloo_lite {
namespace {

TEST(WorkPromise, FinishesItsHandlesOnceWithTheFirstError) {
  WorkPromise promise("staged", "cuda allreduce #3");
  Work work = promise.work();
  EXPECT_FALSE(work.test());
  EXPECT_FALSE(work.wait(std::chrono::milliseconds(1)));
  EXPECT_EQ(work.algorithm(), "staged");
  EXPECT_EQ(work.describe(), "cuda allreduce #3");
  EXPECT_EQ(promise.describe(), "cuda allreduce #3");

  std::atomic<bool> called{false};
  std::thread::id caller;
  work.on_finish([&](std::exception_ptr error) {
    EXPECT_NE(error, nullptr);
    caller = std::this_thread::get_id();
    called = true;
  });
  std::thread finisher([&] {
    promise.finish(std::make_exception_ptr(std::runtime_error("copy failed")));
    promise.finish();  // only the first counts
  });
  std::thread::id finisher_id = finisher.get_id();
  EXPECT_THROW(work.wait(), std::runtime_error);
  finisher.join();
  EXPECT_TRUE(called);
  EXPECT_EQ(caller, finisher_id);  // the callback ran in the finishing thread
  EXPECT_TRUE(promise.work().test());
  EXPECT_NE(promise.work().error(), nullptr);
}

TEST(WorkPromise, SucceedsWithoutError) {
  WorkPromise promise("staged", "cuda broadcast #1");
  Work copy = promise.work();
  promise.finish();
  EXPECT_TRUE(copy.test());
  EXPECT_NO_THROW(copy.wait());
  EXPECT_EQ(copy.error(), nullptr);
  bool called = false;
  copy.on_finish([&](std::exception_ptr error) { called = error == nullptr; });
  EXPECT_TRUE(called);  // right away: it had finished
}

}  // namespace
}  // namespace gloo_lite
