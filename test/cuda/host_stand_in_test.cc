// The host stand-in device layer itself (cuda/host_stand_in.h): that its streams, events and
// counters order work the way CUDA's do, since the pipeline's tests rely on it to catch
// missing waits.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "cuda/host_stand_in.h"

namespace gloo_lite::cuda {
namespace {

using namespace std::chrono_literals;

std::vector<uint8_t> ramp(size_t bytes) {
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(i * 7 + 1);
  return out;
}

TEST(HostStandInLayer, EventOrdersWorkAcrossStreams) {
  HostStandInOptions options;
  options.max_delay = 500us;
  auto layer = host_stand_in_layer(options);
  Stream first = layer->create_stream();
  Stream second = layer->create_stream();
  Event event = layer->create_event();
  const std::vector<uint8_t> source = ramp(4096);
  auto* middle = static_cast<uint8_t*>(layer->allocate_device(source.size()));
  std::vector<uint8_t> result(source.size());
  for (int round = 0; round < 20; ++round) {
    std::memset(middle, 0, source.size());
    layer->copy_to_device(middle, source.data(), source.size(), first);
    layer->record(event, first);
    layer->wait_event(second, event);
    layer->copy_to_host(result.data(), middle, source.size(), second);
    layer->synchronize_stream(second);
    ASSERT_EQ(result, source) << "round " << round;
  }
  layer->free_device(middle);
  layer->destroy_event(event);
  layer->destroy_stream(second);
  layer->destroy_stream(first);
}

TEST(HostStandInLayer, StreamsWithoutAnEventRunOutOfOrder) {
  // The point of the delays: without the wait, the second stream overtakes the first (this is
  // what makes the pipeline tests fail when a wait is missing). The two copies race on `middle`
  // on purpose, as unordered streams do on a GPU (plain bytes: either outcome is a valid read).
  HostStandInOptions options;
  options.max_delay = 2000us;
  auto layer = host_stand_in_layer(options);
  Stream first = layer->create_stream();
  Stream second = layer->create_stream();
  const std::vector<uint8_t> source = ramp(256);
  auto* middle = static_cast<uint8_t*>(layer->allocate_device(source.size()));
  std::vector<uint8_t> result(source.size());
  int overtaken = 0;
  for (int round = 0; round < 20; ++round) {
    std::memset(middle, 0, source.size());
    layer->copy_to_device(middle, source.data(), source.size(), first);
    layer->copy_to_host(result.data(), middle, source.size(), second);
    layer->synchronize_stream(second);
    layer->synchronize_stream(first);
    if (result != source) ++overtaken;
  }
  EXPECT_GT(overtaken, 0) << "20 unordered rounds all came out in order: the delays do not work";
  layer->free_device(middle);
  layer->destroy_stream(second);
  layer->destroy_stream(first);
}

TEST(HostStandInLayer, CounterHoldsTheStreamUntilSet) {
  auto layer = host_stand_in_layer();
  Stream stream = layer->create_stream();
  uint64_t* counter = layer->allocate_counter();
  const std::vector<uint8_t> source = ramp(64);
  std::vector<uint8_t> result(source.size(), 0);
  layer->wait_counter(stream, counter, 2);
  layer->copy_to_host(result.data(), source.data(), source.size(), stream);
  layer->set_counter(counter, 1);  // not enough
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(result, std::vector<uint8_t>(source.size(), 0)) << "the copy ran before the counter";
  layer->set_counter(counter, 2);
  layer->synchronize_stream(stream);
  EXPECT_EQ(result, source);
  layer->free_counter(counter);
  layer->destroy_stream(stream);
}

TEST(HostStandInLayer, ReduceAndDivideRunOnTheStream) {
  auto layer = host_stand_in_layer();
  Stream stream = layer->create_stream();
  auto* a = static_cast<int32_t*>(layer->allocate_device(4 * sizeof(int32_t)));
  auto* b = static_cast<int32_t*>(layer->allocate_device(4 * sizeof(int32_t)));
  const int32_t x[4] = {1, -7, 9, 100}, y[4] = {2, 3, -20, 5};
  std::memcpy(a, x, sizeof x);
  std::memcpy(b, y, sizeof y);
  layer->reduce(a, b, 4, DataType::kInt32, ReduceOp::kSum, stream);
  layer->divide(a, 4, DataType::kInt32, 2, stream);
  layer->synchronize_stream(stream);
  const int32_t expected[4] = {1, -2, -5, 52};  // (x + y) / 2, truncating toward zero
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], expected[i]) << "element " << i;
  EXPECT_THROW(layer->reduce(a, b, 4, DataType::kInt32, ReduceOp::kCustom, stream),
               InvalidArgument);
  layer->free_device(b);
  layer->free_device(a);
  layer->destroy_stream(stream);
}

}  // namespace
}  // namespace gloo_lite::cuda
