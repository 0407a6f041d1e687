// The steps of the shared-memory reductions (allreduce, reduce, reduce_scatter), allgather and
// barrier on a host segment: each step, every rank copies its part into its slot of one of two
// alternating buffers and publishes its sequence flag; the others read the slots directly
// (reduce with the kernels of reduction.h, or copy out). docs/algorithms.md ("shm").
#include <algorithm>
#include <cstring>

#include "gloo_lite/shm/host_segment.h"
#include "gloo_lite/shm/steps.h"

namespace gloo_lite::algo::shm_steps {
namespace {

// dst = input(0) op input(1) op ... op input(P-1), `count` elements, where input(q) points at
// rank q's: the same order on every rank, so that every rank computes the same bits.
template <typename Input>
void reduce_inputs(const Call& call, const Input& input, uint8_t* dst, size_t count) {
  if (count == 0) return;
  call.reduce_to(dst, input(0), input(1), count);
  for (int q = 2; q < call.size; ++q) call.reduce_into(dst, input(q), count);
}

// The same over the slots of `buffer`, at `offset` bytes.
void reduce_slots(const Call& call, HostSegment& segment, int buffer, size_t offset, uint8_t* dst,
                  size_t count) {
  reduce_inputs(
      call, [&](int q) { return segment.slot(q, buffer) + offset; }, dst, count);
}

// Reduces this rank's part [lo, hi) of the chunk in `buffer` into its own slot, in place: only
// this rank reads or writes that part of its slot during the step.
void reduce_own_part(const Call& call, HostSegment& segment, int buffer, size_t lo, size_t hi) {
  uint8_t* mine = segment.slot(call.rank, buffer) + call.bytes(lo);
  for (int q = 0; q < call.size; ++q) {
    if (q != call.rank && hi > lo) {
      call.reduce_into(mine, segment.slot(q, buffer) + call.bytes(lo), hi - lo);
    }
  }
}

// Every slot's reduced part of the chunk in `buffer` into `out` (the chunk's place in the
// output).
void copy_out_parts(const Call& call, HostSegment& segment, int buffer, size_t length,
                    uint8_t* out) {
  for (int s = 0; s < call.size; ++s) {
    size_t lo = part_begin(length, call.size, s), hi = part_begin(length, call.size, s + 1);
    std::memcpy(out + call.bytes(lo), segment.slot(s, buffer) + call.bytes(lo),
                call.bytes(hi - lo));
  }
}

// Small vectors: one step, every rank (only the root, for reduce) reduces all inputs. The
// smallest (a loss, a norm, a flag) travel on the flag's own cache line (inline_payload), so that
// a peer's flag brings its data.
void one_step_reduction(const Call& call, HostSegment& segment, bool reduce_here) {
  int buffer = segment.acquire_buffer();
  const bool on_flag_line = call.bytes(call.count) <= HostSegment::kInlineBytes;
  auto input = [&](int q) {
    return on_flag_line ? segment.inline_payload(q, buffer) : segment.slot(q, buffer);
  };
  std::memcpy(input(call.rank), call.input, call.bytes(call.count));
  segment.publish();
  if (reduce_here) {
    segment.wait_all(segment.seq());
    reduce_inputs(call, input, call.output, call.count);
  }
  // Readers are done with the buffer before their next publish.
  segment.release_buffer(buffer, segment.seq() + 1);
}

// allreduce (to_all) and reduce (the root only) in chunks: copy in, reduce one's part of the
// chunk in one's slot, publish, copy every part out. allreduce copies the next chunk in before
// copying this one out, so that the others can start reducing it meanwhile.
void chunked_reduction(const Call& call, HostSegment& segment, bool to_all) {
  const size_t n = call.count;
  const size_t chunk = segment.chunk_bytes() / call.element;
  const size_t chunks = ceil_div(n, chunk);
  auto length = [&](size_t k) { return std::min(chunk, n - k * chunk); };
  int buffer = segment.acquire_buffer();
  std::memcpy(segment.slot(call.rank, buffer), call.input, call.bytes(length(0)));
  segment.publish();
  for (size_t k = 0; k < chunks; ++k) {
    size_t m = length(k);
    segment.wait_all(segment.seq());  // every slot holds chunk k
    reduce_own_part(call, segment, buffer, part_begin(m, call.size, call.rank),
                    part_begin(m, call.size, call.rank + 1));
    segment.publish();
    bool copy_out = to_all || call.rank == call.root;
    if (copy_out) segment.wait_all(segment.seq());  // every part of chunk k is reduced
    int next = buffer;
    if (to_all && k + 1 < chunks) {
      next = segment.acquire_buffer();
      std::memcpy(segment.slot(call.rank, next), call.input + call.bytes((k + 1) * chunk),
                  call.bytes(length(k + 1)));
      segment.publish();
    }
    if (copy_out) copy_out_parts(call, segment, buffer, m, call.output + call.bytes(k * chunk));
    segment.release_buffer(buffer, segment.seq() + 1);
    if (!to_all && k + 1 < chunks) {
      next = segment.acquire_buffer();
      std::memcpy(segment.slot(call.rank, next), call.input + call.bytes((k + 1) * chunk),
                  call.bytes(length(k + 1)));
      segment.publish();
    }
    buffer = next;
  }
}

}  // namespace

void allreduce(const Call& call, HostSegment& segment) {
  if (call.bytes(call.count) <= std::min(kOneStepBytes, segment.chunk_bytes())) {
    one_step_reduction(call, segment, true);
  } else {
    chunked_reduction(call, segment, true);
  }
}

void reduce(const Call& call, HostSegment& segment) {
  if (call.bytes(call.count) <= std::min(kOneStepBytes, segment.chunk_bytes())) {
    one_step_reduction(call, segment, call.rank == call.root);
  } else {
    chunked_reduction(call, segment, false);
  }
}

// Step k: every rank copies piece k of every block into its slot (piece s at s*piece); rank r
// reduces piece k of block r from all slots straight into its output.
void reduce_scatter(const Call& call, HostSegment& segment) {
  const size_t piece = segment.chunk_bytes() / static_cast<size_t>(call.size) / call.element;
  const size_t longest = *std::max_element(call.blocks.begin(), call.blocks.end());
  for (size_t k = 0; k < ceil_div(longest, piece); ++k) {
    int buffer = segment.acquire_buffer();
    uint8_t* mine = segment.slot(call.rank, buffer);
    for (int s = 0; s < call.size; ++s) {
      std::memcpy(mine + call.bytes(s * piece),
                  call.input + call.bytes(call.offsets[s] + k * piece),
                  call.bytes(piece_length(call.blocks[s], piece, k)));
    }
    segment.publish();
    segment.wait_all(segment.seq());
    // (An empty block may come with a null output: no pointer into it then.)
    size_t length = piece_length(call.blocks[call.rank], piece, k);
    if (length > 0) {
      reduce_slots(call, segment, buffer, call.bytes(call.rank * piece),
                   call.output + call.bytes(k * piece), length);
    }
    segment.release_buffer(buffer, segment.seq() + 1);
  }
}

// Step k: every rank copies piece k of its block (already in place in the output) into its
// slot; everyone copies the others' pieces out.
void allgather(const Call& call, HostSegment& segment) {
  const size_t piece = segment.chunk_bytes() / call.element;
  const size_t longest = *std::max_element(call.blocks.begin(), call.blocks.end());
  for (size_t k = 0; k < ceil_div(longest, piece); ++k) {
    int buffer = segment.acquire_buffer();
    std::memcpy(segment.slot(call.rank, buffer),
                call.output + call.bytes(call.offsets[call.rank] + k * piece),
                call.bytes(piece_length(call.blocks[call.rank], piece, k)));
    segment.publish();
    segment.wait_all(segment.seq());
    for (int s = 0; s < call.size; ++s) {
      if (s == call.rank) continue;
      std::memcpy(call.output + call.bytes(call.offsets[s] + k * piece), segment.slot(s, buffer),
                  call.bytes(piece_length(call.blocks[s], piece, k)));
    }
    segment.release_buffer(buffer, segment.seq() + 1);
  }
}

void barrier(const Call&, HostSegment& segment) {
  segment.publish();
  segment.wait_all(segment.seq());
}

}  // namespace gloo_lite::algo::shm_steps
