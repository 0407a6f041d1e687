// The reduction placement's cost formula and this rank's speeds (cuda/reduce_choice.h).
#include "cuda/reduce_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/reduction.h"

namespace gloo_lite::cuda {
namespace {

constexpr double kGB = 1e9;

double pipeline_time(double stage, double wire, double drain, double chunks) {
  return stage + wire + drain + (chunks - 1) * std::max({stage, wire, drain});
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Bytes per second of `step` (which moves `bytes`), best of a few runs after one warm-up: the
// best run is the machine's speed, the others include scheduling noise.
template <typename Step>
double best_rate(size_t bytes, Step&& step) {
  step();
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    step();
    const double elapsed = seconds_since(start);
    if (elapsed > 0) best = std::max(best, static_cast<double>(bytes) / elapsed);
  }
  return best;
}

}  // namespace

double placement_cost(const Speeds& s, ReduceOn on, size_t bytes, int ranks, size_t slot_bytes) {
  const double p = ranks;
  const double total = static_cast<double>(bytes);
  const bool device = on == ReduceOn::kDevice;
  const double per_chunk = static_cast<double>(slot_bytes) / (device ? p : 1);
  const double n = std::min(total, per_chunk);
  const double chunks = std::max(1.0, std::ceil(total / per_chunk));
  const double stage = n / s.copy;
  if (device) {
    return pipeline_time(stage, (p - 1) * n / s.wire,
                         p * n / s.copy + (p - 1) * n / s.device_reduce, chunks);
  }
  const double wire = 2 * (p - 1) / p * n / s.wire + (p - 1) / p * n / s.host_reduce;
  return pipeline_time(stage, wire, n / s.copy, chunks);
}

ReduceOn choose_reduce_on(const Speeds& s, size_t bytes, int ranks, size_t slot_bytes) {
  const bool known = s.copy > 0 && s.device_reduce > 0 && s.host_reduce > 0 && s.wire > 0;
  if (!known || ranks < 2 || bytes == 0) return ReduceOn::kHost;
  const double device = placement_cost(s, ReduceOn::kDevice, bytes, ranks, slot_bytes);
  const double host = placement_cost(s, ReduceOn::kHost, bytes, ranks, slot_bytes);
  return device < host ? ReduceOn::kDevice : ReduceOn::kHost;
}

Speeds measure_speeds(DeviceLayer& layer) {
  Speeds speeds;
  speeds.copy = knob_double("GLOO_LITE_CUDA_COPY_GBPS") * kGB;
  speeds.device_reduce = knob_double("GLOO_LITE_CUDA_KERNEL_GBPS") * kGB;
  speeds.host_reduce = knob_double("GLOO_LITE_CUDA_HOST_REDUCE_GBPS") * kGB;
  speeds.wire = knob_double("GLOO_LITE_BETA_GBPS") * kGB;

  constexpr size_t kBytes = size_t{1} << 20;
  constexpr size_t kCount = kBytes / sizeof(float);
  if (speeds.host_reduce <= 0) {
    std::vector<float> a(kCount, 1.0f), b(kCount, 2.0f);
    speeds.host_reduce = best_rate(kBytes, [&] {
      reduce_into(a.data(), b.data(), kCount, DataType::kFloat32, ReduceOp::kSum);
    });
  }
  if (speeds.copy > 0 && speeds.device_reduce > 0) return speeds;

  Stream stream = layer.create_stream();
  void* a = nullptr;
  void* b = nullptr;
  void* host = nullptr;
  try {
    a = layer.allocate_device(kBytes);
    b = layer.allocate_device(kBytes);
    host = layer.allocate_pinned(kBytes);
    if (speeds.copy <= 0) {
      const double to_host = best_rate(kBytes, [&] {
        layer.copy_to_host(host, a, kBytes, stream);
        layer.synchronize_stream(stream);
      });
      const double to_device = best_rate(kBytes, [&] {
        layer.copy_to_device(a, host, kBytes, stream);
        layer.synchronize_stream(stream);
      });
      speeds.copy = std::min(to_host, to_device);
    }
    if (speeds.device_reduce <= 0) {
      speeds.device_reduce = best_rate(kBytes, [&] {
        layer.reduce(a, b, kCount, DataType::kFloat32, ReduceOp::kSum, stream);
        layer.synchronize_stream(stream);
      });
    }
  } catch (...) {
    layer.synchronize_stream(stream);
    if (host != nullptr) layer.free_pinned(host);
    if (b != nullptr) layer.free_device(b);
    if (a != nullptr) layer.free_device(a);
    layer.destroy_stream(stream);
    throw;
  }
  layer.free_pinned(host);
  layer.free_device(b);
  layer.free_device(a);
  layer.destroy_stream(stream);
  return speeds;
}

}  // namespace gloo_lite::cuda
