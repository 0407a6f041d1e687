// What every rank of a cuda::Communicator must decide alike, agreed once at its creation: one
// small CPU allreduce (kMin over float64) on the context. The minimum is exact, so every rank
// gets the same bits; it is also the right rule: the pipeline runs at its slowest rank's
// speed, and device memory may go to the transport only if every rank's mesh takes it.
#pragma once

#include <cstdint>

#include "cuda/reduce_choice.h"
#include "gloo_lite/context.h"

namespace gloo_lite::cuda {

struct Agreement {
  Speeds speeds;           // for ReduceOn::kAuto
  bool gpudirect = false;  // every rank can hand device memory to its mesh (cuda/gpudirect.h)
};

// Collective (every rank, in the same order as other calls on CPU-collective tag `tag`):
// returns the elementwise minimum of every rank's `mine`. With one rank, `mine`.
Agreement agree(Context& context, const Agreement& mine, uint16_t tag);

// Whether a call of `count` elements of `type` with `op` reduces on the device: `on` forced,
// or (kAuto) choose_reduce_on with the agreed speeds; kCustom always on the host.
bool reduces_on_device(ReduceOn on, const Agreement& agreed, DataType type, ReduceOp op,
                       size_t count, int ranks, size_t slot_bytes);

}  // namespace gloo_lite::cuda
