// Reduction kernels: dst[i] = op(dst[i], src[i]) for every type and operation, vectorised
// (AVX2, F16C for float16; chosen at run time by CPU features) with a portable fallback.
// float16 and bfloat16 are widened to float, combined, and rounded back to nearest-even.
#pragma once

#include <cstddef>

#include "gloo_lite/types.h"

namespace gloo_lite {

// Combines `count` elements: dst = op(dst, src). kAvg combines as a sum (the caller divides by
// P once at the end with finish_average). kCustom calls `custom`.
// kBand, kBor, kBxor (integer types only; InvalidArgument otherwise) are &, |, ^ elementwise.
// Integer sum/prod wrap modulo 2^bits. Float min/max propagate NaN (a NaN on either side gives
// NaN, unlike fmin), so a rank with NaN shows in the result whatever the reduction order; and
// they are symmetric, op(a, b) and op(b, a) give the same bits (-0 is the min of -0 and +0, +0
// the max), so every rank of an allreduce ends with the same bits.
// Both kernel families give the same bits (reduction_kernels.h has the exact rules).
void reduce_into(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                 const ReduceFunction& custom = {});
// dst = op(a, b): lets an algorithm combine two received buffers without a copy first. dst may
// be a or b; other overlaps are undefined.
void reduce_to(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op,
               const ReduceFunction& custom = {});
// For kAvg: divides every element by `ranks` (integers: C++ division, truncating toward zero;
// float16/bfloat16: in float, rounded to nearest-even).
void finish_average(void* data, size_t count, DataType type, int ranks);

// The kernel family chosen for this CPU: "avx2+f16c" or "portable"; GLOO_LITE_SIMD=portable
// forces the fallback (for tests and comparisons).
const char* reduction_isa();

}  // namespace gloo_lite
