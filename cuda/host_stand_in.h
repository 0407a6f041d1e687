// The host stand-in device layer: DeviceLayer (cuda/device_layer.h) without a GPU, for testing
// the staging pipeline on machines that have none (like Open MPI's null accelerator or UCC's
// mc/cpu, but asynchronous on purpose). Device memory is host memory; every stream is a worker
// thread running its queue in order; each queued operation first sleeps a random delay in
// [0, max_delay], so that work on different streams finishes in varying orders and a missing
// event wait in the pipeline becomes a wrong result rather than a silent race. Reductions use the
// CPU kernels of gloo_lite/reduction.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "cuda/device_layer.h"

namespace gloo_lite::cuda {

struct HostStandInOptions {
  // Upper bound of the delay before each queued operation (copies, reductions, records).
  std::chrono::microseconds max_delay{0};
  // Seed of the delays (each stream draws from its own generator seeded from this).
  uint64_t seed = 1;
  // Bytes written over fresh device and pinned allocations, so that a chunk read before it was
  // written shows as garbage rather than as zeros.
  uint8_t poison = 0xA5;
  // Which stand-in device this is, for several "GPUs" in one process (cuda/multi_device.h):
  // only named in name() (device 0 keeps the plain name); the memory of every stand-in device
  // is host memory that any other can copy from.
  int device = 0;
};

std::shared_ptr<DeviceLayer> host_stand_in_layer(const HostStandInOptions& options = {});

}  // namespace gloo_lite::cuda
