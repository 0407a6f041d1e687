// The std::span overloads, compiled as C++20 (the library is C++17).
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "gloo_lite/collectives.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

TEST(SpanOverloads, AllreduceBroadcastAllgather) {
  run_context_threads(3, [](Context& context) {
    std::vector<float> data(100, static_cast<float>(context.rank()));
    allreduce(context, std::span<float>(data));
    EXPECT_EQ(data[99], 0.0f + 1.0f + 2.0f);

    std::vector<int> values(5, context.rank() == 2 ? 7 : 0);
    broadcast(context, std::span<int>(values), 2);
    EXPECT_EQ(values, std::vector<int>(5, 7));

    std::vector<double> mine(2, context.rank());
    std::vector<double> all(6);
    allgather(context, std::span<const double>(mine), std::span<double>(all));
    EXPECT_EQ(all, (std::vector<double>{0, 0, 1, 1, 2, 2}));

    std::vector<double> wrong(5);
    EXPECT_THROW(allgather(context, std::span<const double>(mine), std::span<double>(wrong)),
                 InvalidArgument);
  });
}

}  // namespace
}  // namespace gloo_lite::test
