#include "bench_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "bench_sweep.h"
#include "cuda/host_stand_in.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite::bench {
namespace {

std::shared_ptr<cuda::DeviceLayer> make_layer(Options::Mode mode) {
  if (mode == Options::Mode::kCuda) return cuda::cuda_device_layer(0);
  // No injected delays: the benchmark times the pipeline, the tests hunt for races.
  return cuda::host_stand_in_layer();
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

DeviceRun::DeviceRun(Context& context, const Options& options) : layer_(make_layer(options.mode)) {
  cuda::PipelineOptions pipeline;
  pipeline.slot_bytes = options.slot_bytes;
  pipeline.slots = options.slots;
  communicator_ = std::make_unique<cuda::Communicator>(context, layer_, pipeline);
  stream_ = layer_->create_stream();
  input_ = static_cast<uint8_t*>(layer_->allocate_device(options.max_bytes));
  output_ = static_cast<uint8_t*>(layer_->allocate_device(options.max_bytes));
}

DeviceRun::~DeviceRun() {
  // The calls are blocking, but a failed one may leave work queued: drain before freeing.
  try {
    communicator_->synchronize();
  } catch (const std::exception&) {  // already reported by the call that failed
  }
  layer_->synchronize_stream(stream_);
  layer_->free_device(input_);
  layer_->free_device(output_);
  layer_->destroy_stream(stream_);
  communicator_.reset();
}

std::string DeviceRun::describe() const {
  const cuda::PipelineOptions& pipeline = communicator_->options();
  return std::string(layer_->name()) + ", staging " + std::to_string(pipeline.slots) + " x " +
         mib(pipeline.slot_bytes) + " pinned";
}

bool has_device_form(Kind kind) {
  switch (kind) {
    case Kind::kAllreduce:
    case Kind::kReduce:
    case Kind::kReduceScatter:
    case Kind::kAllgather:
    case Kind::kBroadcast:
    case Kind::kAlltoall:
      return true;
    default:
      return false;
  }
}

DeviceCall::DeviceCall(Context& context, const Setup& setup, Buffers& host, DeviceRun& device)
    : setup_(setup),
      host_buffers_(host),
      device_(device),
      host_(context, setup, host),
      input_(on_device(host_.input())),
      output_(on_device(host_.output())) {
  if (!has_device_form(setup.info->kind)) {
    throw InvalidArgument(std::string("gloo_lite_bench -m cuda: ") + setup.info->name +
                          " has no device form in gloo_lite::cuda; choose among allreduce, "
                          "reduce, reduce_scatter, allgather, broadcast, alltoall");
  }
}

uint8_t* DeviceCall::on_device(const uint8_t* host) const {
  // The host buffers are separate allocations; an address is inside exactly one of them.
  auto address = reinterpret_cast<uintptr_t>(host);
  auto out = reinterpret_cast<uintptr_t>(host_buffers_.output.data());
  if (address >= out && address - out <= setup_.shape.bytes) {
    return device_.output() + (address - out);
  }
  return device_.input() + (address - reinterpret_cast<uintptr_t>(host_buffers_.input.data()));
}

void DeviceCall::run() const {
  const Setup& s = setup_;
  cuda::Communicator& c = device_.communicator();
  cuda::Stream stream = device_.stream();
  size_t count = s.shape.count;
  switch (s.info->kind) {
    case Kind::kAllreduce:
      cuda::allreduce(c, input_, output_, count, s.type, s.op, stream, s.options);
      break;
    case Kind::kReduce:
      cuda::reduce(c, input_, output_, count, s.type, s.op, s.root, stream, s.options);
      break;
    case Kind::kReduceScatter:
      cuda::reduce_scatter(c, input_, output_, count, s.type, s.op, stream, s.options);
      break;
    case Kind::kAllgather:
      cuda::allgather(c, input_, output_, count, s.type, stream, s.options);
      break;
    case Kind::kBroadcast:
      cuda::broadcast(c, output_, count, s.type, s.root, stream, s.options);
      break;
    case Kind::kAlltoall:
      cuda::alltoall(c, input_, output_, count, s.type, stream, s.options);
      break;
    default:
      break;  // rejected by the constructor
  }
}

void DeviceCall::fill_inputs() const {
  host_.fill_inputs();
  // Both whole buffers: the poisoned output and the values (in place, inside the output).
  cuda::DeviceLayer& layer = device_.layer();
  size_t bytes = setup_.shape.bytes;
  layer.copy_to_device(device_.input(), host_buffers_.input.data(), bytes, device_.stream());
  layer.copy_to_device(device_.output(), host_buffers_.output.data(), bytes, device_.stream());
  layer.synchronize_stream(device_.stream());
}

size_t DeviceCall::count_wrong() const {
  cuda::DeviceLayer& layer = device_.layer();
  layer.copy_to_host(host_buffers_.output.data(), device_.output(), setup_.shape.bytes,
                     device_.stream());
  layer.synchronize_stream(device_.stream());
  return host_.count_wrong();
}

namespace {

using Clock = std::chrono::steady_clock;

// Seconds per copy of `bytes` in one direction: warm-up, then as many copies as fit in
// --size-time (at least 5), each waited for (the pipeline waits for each chunk's copy too).
double time_copies(Context& context, cuda::DeviceLayer& layer, cuda::Stream stream, bool to_host,
                   void* pinned, void* device, size_t bytes, const Options& options) {
  auto copy = [&] {
    if (to_host) {
      layer.copy_to_host(pinned, device, bytes, stream);
    } else {
      layer.copy_to_device(device, pinned, bytes, stream);
    }
    layer.synchronize_stream(stream);
  };
  for (int i = 0; i < std::max(options.warmup, 1); ++i) copy();
  auto start = Clock::now();
  copy();
  double once =
      max_over_ranks(context, std::chrono::duration<double>(Clock::now() - start).count());
  int iterations = options.iterations > 0
                       ? options.iterations
                       : static_cast<int>(std::clamp(
                             std::ceil(options.seconds_per_size / std::max(once, 1e-7)), 5.0, 1e5));
  barrier(context, control_options());
  start = Clock::now();
  for (int i = 0; i < iterations; ++i) copy();
  double average = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  return max_over_ranks(context, average);
}

}  // namespace

void measure_copy_limit(Context& context, DeviceRun& device, const Options& options) {
  cuda::DeviceLayer& layer = device.layer();
  bool printer = context.rank() == 0;
  void* pinned = layer.allocate_pinned(options.max_bytes);
  std::string json;
  if (printer) {
    std::printf("#\n# copy limit: %s, %d rank(s) copying at once, slowest rank's time\n",
                layer.name(), context.size());
    std::printf("#%14s %12s %10s %12s %10s\n", "size", "d2h_us", "d2h_GB/s", "h2d_us", "h2d_GB/s");
  }
  for (uint64_t bytes : sweep_sizes(options)) {
    if (bytes == 0) continue;
    double seconds[2];
    for (bool to_host : {true, false}) {
      seconds[to_host ? 0 : 1] = time_copies(context, layer, device.stream(), to_host, pinned,
                                             device.input(), bytes, options);
    }
    if (!printer) continue;
    double d2h = static_cast<double>(bytes) / seconds[0] / 1e9;
    double h2d = static_cast<double>(bytes) / seconds[1] / 1e9;
    std::printf("%15llu %12.2f %10.2f %12.2f %10.2f\n", static_cast<unsigned long long>(bytes),
                seconds[0] * 1e6, d2h, seconds[1] * 1e6, h2d);
    std::fflush(stdout);
    const char* names[2] = {"d2h", "h2d"};
    for (int d = 0; d < 2; ++d) {
      char object[256];
      std::snprintf(object, sizeof(object),
                    "{\"copy\": \"%s\", \"layer\": \"%s\", \"P\": %d, \"bytes\": %llu, "
                    "\"time_us\": %.6g, \"GBps\": %.6g}",
                    names[d], layer.name(), context.size(), static_cast<unsigned long long>(bytes),
                    seconds[d] * 1e6, static_cast<double>(bytes) / seconds[d] / 1e9);
      json += (json.empty() ? "  " : ",\n  ") + std::string(object);
    }
  }
  layer.free_pinned(pinned);
  if (printer && !options.json_path.empty()) {
    std::ofstream file(options.json_path);
    file << "[\n" << json << (json.empty() ? "" : "\n") << "]\n";
    if (!file)
      throw Error("--json: cannot write " + options.json_path + ": " + std::strerror(errno));
  }
}

}  // namespace gloo_lite::bench
