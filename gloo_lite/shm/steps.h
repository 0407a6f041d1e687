// The steps of the shared-memory collectives, one function per collective, each run between
// the segment's begin() and end() (run_in_segment, collectives.h): steps.cc has the reductions,
// allgather and barrier, broadcast.cc broadcast. Internal to gloo_lite/shm/.
#pragma once

#include <algorithm>
#include <cstddef>

#include "gloo_lite/algorithms/call.h"

namespace gloo_lite {
class HostSegment;
}

namespace gloo_lite::algo::shm_steps {

// Up to this size an allreduce (reduce) is one step: every rank (the root) reduces all P slots
// itself, one flag round trip instead of two.
constexpr size_t kOneStepBytes = 16 * 1024;

inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// Elements [begin, end) of part `s` of `n` elements in `parts` nearly equal parts.
inline size_t part_begin(size_t n, int parts, int s) { return n * static_cast<size_t>(s) / parts; }

// Piece `k` of a block of `block` elements in pieces of `piece`: its length (0 past the end).
inline size_t piece_length(size_t block, size_t piece, size_t k) {
  return block > k * piece ? std::min(piece, block - k * piece) : 0;
}

void allreduce(const Call& call, HostSegment& segment);
void reduce(const Call& call, HostSegment& segment);
void reduce_scatter(const Call& call, HostSegment& segment);
void allgather(const Call& call, HostSegment& segment);
void barrier(const Call& call, HostSegment& segment);
// A single copy with CMA for large vectors, else through the segment.
void broadcast(const Call& call, HostSegment& segment);

}  // namespace gloo_lite::algo::shm_steps
