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

// Throws InvalidArgument when the byte ranges [a, a + a_bytes) and [b, b + b_bytes) overlap
// without starting at the same address (the one aliasing the API defines: in place), or when
// a range wraps past the end of the address space.
void check_overlap(const char* collective, const void* a, size_t a_bytes, const char* a_name,
                   const void* b, size_t b_bytes, const char* b_name);

}  // namespace gloo_lite
