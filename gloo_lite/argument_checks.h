// Checks on the sizes and buffers a collective is given, made before any memory is touched.
// Counts are the user's (elements); every byte size the library derives from them is checked
// here once for overflow, so no later offset or length computation can wrap.
#pragma once

#include <cstddef>
#include <vector>

#include "gloo_lite/types.h"

namespace gloo_lite {

// Largest byte size of one buffer: pointer differences must stay representable.
size_t max_buffer_bytes();

// `elements` * `element_bytes`, or InvalidArgument naming the collective, `what` and the count
// when that exceeds max_buffer_bytes().
size_t checked_bytes(const char* collective, size_t elements, size_t element_bytes,
                     const char* what);

// The sum of per-rank element counts, or InvalidArgument when the sum (in elements or in
// bytes) does not fit.
size_t checked_total(const char* collective, const std::vector<size_t>& counts,
                     size_t element_bytes, const char* what);

// Throws InvalidArgument when `op` is not a ReduceOp, or is a bitwise op (band, bor, bxor) and
// `type` is not an integer type; the message names the collective, the rank, the op and the
// type. `type` must be valid (checked before, by element_size).
void check_op(const char* collective, int rank, DataType type, ReduceOp op);

// A collective's one in-place form (collectives.h): the input starting `offset` bytes after
// the output's start (negative: the output inside the input, as scatter's at the root), and its
// wording for messages. `exists` is false where the collective has none (alltoall): `what` then
// says what to pass.
struct InPlaceForm {
  bool exists = true;
  ptrdiff_t offset = 0;
  const char* what = "the same pointer as input and output";
};

// Throws InvalidArgument when the input [input, + input_bytes) and the output overlap in any
// way but exactly `in_place` (input == output is in place only where the form's offset is 0:
// allgather's input at output + rank * count elements is, input == output on rank 1 is not), or
// when a range wraps past the end of the address space. The message names the collective, the
// rank and the in-place form to pass instead.
void check_overlap(const char* collective, int rank, const void* input, size_t input_bytes,
                   const void* output, size_t output_bytes, const InPlaceForm& in_place = {});

}  // namespace gloo_lite
