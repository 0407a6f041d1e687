// The GPUDirect path of the CUDA collectives (docs/cuda.md, "GPUDirect"): where every rank's
// mesh can register CUDA memory (Mesh::can_register(kCuda): ibverbs with the nvidia_peermem
// module), send/recv, broadcast and allgather -- the calls that reduce nothing -- hand the
// device buffers, registered as MemoryKind::kCuda, straight to the transport instead of staging
// them through the pinned pool. It runs only where such hardware is; elsewhere (TCP, shared
// memory, a mixed mesh with either, the host stand-in) the staging pipeline runs as before.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/device_layer.h"
#include "cuda/pipeline.h"
#include "gloo_lite/context.h"
#include "gloo_lite/transport/transport.h"

namespace gloo_lite::cuda {

// This rank's part of the decision (agreed across ranks by cuda/agreement.h): the knob
// GLOO_LITE_CUDA_GPUDIRECT is on, the layer's device memory is real device memory (not the host
// stand-in's), and the context's mesh registers CUDA memory for every peer.
bool gpudirect_possible(Context& context, const DeviceLayer& layer);

// The calls on device memory, run by the Communicator's worker (after the caller's earlier
// work: each first waits for `lanes.to_host`, which waits for the call's start event).
// Point-to-point under the user's tag, as Context::send/recv (so they match staged ones).
void gpudirect_send(Lanes& lanes, Context& context, const void* data, size_t bytes, int peer,
                    uint64_t tag);
void gpudirect_recv(Lanes& lanes, Context& context, void* data, size_t bytes, int peer,
                    uint64_t tag);
// One call on CPU-collective stream `tag` (it takes that stream's next turn, as a staged call's
// CPU collective would): the root sends to every rank / every rank sends its block to every
// rank, all posted at once.
void gpudirect_broadcast(Lanes& lanes, Context& context, void* data, size_t bytes, int root,
                         uint16_t tag);
void gpudirect_allgather(Lanes& lanes, Context& context, const void* input, void* output,
                         size_t bytes, uint16_t tag);

}  // namespace gloo_lite::cuda
