// The host stand-in device layer (cuda/host_stand_in.h): streams are worker threads, events are
// generation counters, "device" memory is host memory.
#include "cuda/host_stand_in.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>

#include "gloo_lite/reduction.h"

namespace gloo_lite::cuda {
namespace {

// A queue run in order by its own thread, each operation after a random delay.
class HostStream {
 public:
  HostStream(std::chrono::microseconds max_delay, uint64_t seed)
      : max_delay_(max_delay), random_(seed), thread_([this] { run(); }) {}
  ~HostStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();  // runs what is queued first
  }

  void enqueue(std::function<void()> operation) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(operation));
    }
    changed_.notify_all();
  }

  void synchronize() {
    std::mutex done_mutex;
    std::condition_variable done_cv;
    bool done = false;
    enqueue([&] {
      std::lock_guard<std::mutex> lock(done_mutex);
      done = true;
      done_cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(done_mutex);
    done_cv.wait(lock, [&] { return done; });
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> operation;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        operation = std::move(queue_.front());
        queue_.pop_front();
      }
      if (max_delay_.count() > 0) {
        std::uniform_int_distribution<int64_t> draw(0, max_delay_.count());
        std::this_thread::sleep_for(std::chrono::microseconds(draw(random_)));
      }
      operation();
    }
  }

  const std::chrono::microseconds max_delay_;
  std::mt19937_64 random_;  // used by the worker only
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;  // under mutex_
  bool stopping_ = false;                    // under mutex_
  std::thread thread_;                       // last: starts once the rest exists
};

// CUDA's event rule: a wait is for the last capture recorded before it.
struct HostEvent {
  std::mutex mutex;
  std::condition_variable completed_cv;
  uint64_t recorded = 0;   // captures made
  uint64_t completed = 0;  // captures whose stream has passed them

  void wait_for(uint64_t generation) {
    std::unique_lock<std::mutex> lock(mutex);
    completed_cv.wait(lock, [&] { return completed >= generation; });
  }
  uint64_t last_recorded() {
    std::lock_guard<std::mutex> lock(mutex);
    return recorded;
  }
};

// The word is the first member, so that the uint64_t* the layer hands out leads back here.
struct HostCounter {
  uint64_t value = 0;
  std::mutex mutex;
  std::condition_variable changed;
};
static_assert(std::is_standard_layout_v<HostCounter>, "the counter word must lead to its struct");

class HostStandIn final : public DeviceLayer {
 public:
  explicit HostStandIn(const HostStandInOptions& options)
      : options_(options),
        name_(std::string("host stand-in") +
              (options.device != 0 ? " device " + std::to_string(options.device) : "") +
              " (delays up to " + std::to_string(options.max_delay.count()) + " us)") {}

  const char* name() const override { return name_.c_str(); }
  bool device_memory_is_host() const override { return true; }

  void* allocate_device(size_t bytes) override { return allocate(bytes, "device"); }
  void free_device(void* pointer) noexcept override { std::free(pointer); }
  void* allocate_pinned(size_t bytes) override { return allocate(bytes, "pinned"); }
  void free_pinned(void* pointer) noexcept override { std::free(pointer); }

  Stream create_stream() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return new HostStream(options_.max_delay, options_.seed * 0x9E3779B97F4A7C15ull + ++streams_);
  }
  void destroy_stream(Stream stream) noexcept override { delete as_stream(stream); }
  Event create_event() override { return new HostEvent(); }
  void destroy_event(Event event) noexcept override { delete static_cast<HostEvent*>(event); }

  void record(Event event, Stream stream) override {
    auto* host_event = static_cast<HostEvent*>(event);
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(host_event->mutex);
      generation = ++host_event->recorded;
    }
    as_stream(stream)->enqueue([host_event, generation] {
      // Notified under the lock: a waiter that sees the capture may destroy the event at once.
      std::lock_guard<std::mutex> lock(host_event->mutex);
      if (host_event->completed < generation) host_event->completed = generation;
      host_event->completed_cv.notify_all();
    });
  }
  void wait_event(Stream stream, Event event) override {
    auto* host_event = static_cast<HostEvent*>(event);
    const uint64_t generation = host_event->last_recorded();
    as_stream(stream)->enqueue([host_event, generation] { host_event->wait_for(generation); });
  }
  void synchronize_event(Event event) override {
    auto* host_event = static_cast<HostEvent*>(event);
    host_event->wait_for(host_event->last_recorded());
  }
  void synchronize_stream(Stream stream) override { as_stream(stream)->synchronize(); }

  void copy_to_host(void* host, const void* device, size_t bytes, Stream stream) override {
    copy(host, device, bytes, stream);
  }
  void copy_to_device(void* device, const void* host, size_t bytes, Stream stream) override {
    copy(device, host, bytes, stream);
  }
  void copy_on_device(void* dst, const void* src, size_t bytes, Stream stream) override {
    copy(dst, src, bytes, stream);
  }
  void reduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
              Stream stream) override {
    if (op == ReduceOp::kCustom) {
      throw InvalidArgument("host stand-in reduce: a custom operation cannot run on the device");
    }
    as_stream(stream)->enqueue(
        [dst, src, count, type, op] { reduce_into(dst, src, count, type, op); });
  }
  void divide(void* data, size_t count, DataType type, int ranks, Stream stream) override {
    as_stream(stream)->enqueue(
        [data, count, type, ranks] { finish_average(data, count, type, ranks); });
  }

  uint64_t* allocate_counter() override { return &(new HostCounter())->value; }
  void free_counter(uint64_t* counter) noexcept override { delete as_counter(counter); }
  void wait_counter(Stream stream, uint64_t* counter, uint64_t value) override {
    HostCounter* host_counter = as_counter(counter);
    as_stream(stream)->enqueue([host_counter, value] {
      std::unique_lock<std::mutex> lock(host_counter->mutex);
      host_counter->changed.wait(lock, [&] { return host_counter->value >= value; });
    });
  }
  void set_counter(uint64_t* counter, uint64_t value) override {
    HostCounter* host_counter = as_counter(counter);
    std::lock_guard<std::mutex> lock(host_counter->mutex);
    host_counter->value = value;
    host_counter->changed.notify_all();
  }

 private:
  static HostStream* as_stream(Stream stream) {
    if (stream == nullptr) {
      throw InvalidArgument(
          "host stand-in: stream 0 is not a stream here (it has no legacy default stream); pass "
          "one from create_stream()");
    }
    return static_cast<HostStream*>(stream);
  }
  static HostCounter* as_counter(uint64_t* counter) {
    return reinterpret_cast<HostCounter*>(counter);
  }

  void* allocate(size_t bytes, const char* kind) {
    void* pointer = std::malloc(bytes == 0 ? 1 : bytes);
    if (pointer == nullptr) {
      throw Error(std::string("host stand-in: allocating ") + std::to_string(bytes) + " bytes of " +
                  kind + " memory failed");
    }
    std::memset(pointer, options_.poison, bytes);
    return pointer;
  }

  void copy(void* dst, const void* src, size_t bytes, Stream stream) {
    as_stream(stream)->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }

  const HostStandInOptions options_;
  const std::string name_;
  std::mutex mutex_;
  uint64_t streams_ = 0;  // under mutex_
};

}  // namespace

std::shared_ptr<DeviceLayer> host_stand_in_layer(const HostStandInOptions& options) {
  return std::make_shared<HostStandIn>(options);
}

}  // namespace gloo_lite::cuda
