// The steps of the shared-memory collectives (steps.cc, broadcast.cc) for algorithms that run one
// phase of a call in a host segment whose ranks are a group of the context (hierarchical.cc).
// `call` is that phase's: its rank, size, root, counts and buffers are within the group.
#pragma once

#include <cstddef>

#include "gloo_lite/algorithms/registry.h"

namespace gloo_lite {
class HostSegment;
}

namespace gloo_lite::algo {

// The per-rank chunk of a segment (GLOO_LITE_SHM_CHUNK_BYTES).
size_t shm_chunk_bytes();
// Runs the steps of call.collective (allreduce, reduce, broadcast, reduce_scatter, allgather or
// barrier) on `segment`, between the segment's begin() and end(), which are the caller's.
void run_shm_steps(const Call& call, HostSegment& segment);
// Runs `steps` on `segment` between its begin() and end(). A MismatchError found by the
// transport (a peer runs another algorithm) goes into the segment's abort record as
// `context_rank`'s, so that the ranks waiting there raise it too. (TimeoutError: the hang
// report first; the context's failure reaches the segment after it.)
void run_in_segment(const Call& call, HostSegment& segment, int context_rank,
                    void (*steps)(const Call&, HostSegment&));
// The shm family's cost estimate of `call`.
double shm_cost(const Call& call, const CostModel& model);

}  // namespace gloo_lite::algo
