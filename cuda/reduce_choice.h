// Where allreduce and reduce combine received data when PipelineOptions::reduce_on is kAuto
// (docs/cuda.md, "Where reductions run"): a cost formula over four speeds, evaluated per call.
//
// Per call of `bytes` on P ranks, each placement is a three-step pipeline over chunks (stage:
// device-to-host, wire: the CPU collective, drain: host-to-device and kernels), costed as
//   T = stage + wire + drain + (chunks - 1) * max(stage, wire, drain)     (n: bytes per chunk)
//   kHost:   n = slot_bytes      stage = n/copy  wire = 2(P-1)/P n/wire + (P-1)/P n/host_reduce
//                                drain = n/copy
//   kDevice: n = slot_bytes / P  stage = n/copy  wire = (P-1) n/wire           (an allgather)
//                                drain = P n/copy + (P-1) n/device_reduce
// and kDevice is chosen only when it is strictly cheaper (an unknown speed, 0, means kHost).
// The speeds are measured once per Communicator (measure_speeds, or knobs) and agreed by every
// rank (cuda/agreement.h), so that every rank computes the same choice for the same call.
#pragma once

#include <cstddef>

#include "cuda/collectives.h"
#include "cuda/device_layer.h"

namespace gloo_lite::cuda {

// Bytes per second; 0 means unknown.
struct Speeds {
  double copy = 0;           // pinned copy, one direction (the slower of D2H and H2D)
  double device_reduce = 0;  // the layer's reduction kernel, bytes of input
  double host_reduce = 0;    // gloo_lite's CPU kernels (gloo_lite/reduction.h), bytes of input
  double wire = 0;           // point-to-point bandwidth (GLOO_LITE_BETA_GBPS, the cost model's)
};

// The formula above, in seconds; `on` is kHost or kDevice.
double placement_cost(const Speeds& speeds, ReduceOn on, size_t bytes, int ranks,
                      size_t slot_bytes);
// kHost or kDevice for one call, by placement_cost (kHost for P < 2 and for unknown speeds).
ReduceOn choose_reduce_on(const Speeds& speeds, size_t bytes, int ranks, size_t slot_bytes);

// This rank's speeds: GLOO_LITE_CUDA_COPY_GBPS, _KERNEL_GBPS and _HOST_REDUCE_GBPS when set
// (> 0), each other one measured on `layer` (1 MiB float32, a few repetitions: a few ms on a
// GPU); wire from GLOO_LITE_BETA_GBPS.
Speeds measure_speeds(DeviceLayer& layer);

}  // namespace gloo_lite::cuda
