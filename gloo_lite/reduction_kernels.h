// Internal: the two kernel families behind reduce_into/reduce_to, callable directly so that tests
// and benchmarks can run and compare both in one process.
//
// Every kernel computes dst[i] = op(a[i], b[i]) for i < count. dst may be a or b (the same
// pointer: each element is read before it is written); any other overlap is undefined. Buffers
// must be aligned to their element type. kAvg uses the kSum kernel; kCustom has no kernel, and
// kBand, kBor, kBxor have kernels for the integer types only.
//
// Semantics shared by both families, bit for bit (the tests compare them):
//  - Integers: sum and prod wrap modulo 2^bits (computed on the unsigned type, so signed overflow
//    is not undefined behaviour); min/max are exact; band/bor/bxor are &, |, ^ of the
//    two's-complement bits.
//  - Floats: IEEE sum and prod. min/max are symmetric, op(a, b) and op(b, a) give the same bits,
//    so every rank ends with the same bits whatever order an algorithm combines their values in:
//    where one operand is strictly below (min) or above (max) the other it is the result;
//    otherwise the two bit patterns are combined: OR for min of equal values (-0 wins over +0),
//    AND for max of equal values (+0 wins), and OR where either is a NaN, which is a NaN (all-ones
//    exponent, non-zero mantissa) whatever the other operand. So a NaN on any rank makes the
//    reduced element NaN (fmin-style NaN dropping would hide a diverged rank); its payload and
//    sign mix those of the operands.
//  - float16/bfloat16: both operands widen exactly to float, combine in float, round once to
//    nearest-even (float16_bits.h). Since float has at least 2p+2 bits for both formats, this
//    equals the correctly rounded 16-bit sum/product. min/max follow the rule above without
//    conversions: they compare the patterns as sign-magnitude integers (-0 below +0) and return
//    an operand, or the OR of both made quiet where either is a NaN.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gloo_lite/types.h"

namespace gloo_lite::detail {

enum class KernelFamily : uint8_t { kPortable, kAvx2 };

using ReduceKernel = void (*)(void* dst, const void* a, const void* b, size_t count);

// Portable C++ loops, auto-vectorised for the baseline ISA (reduction.cc). Returns nullptr for
// kCustom, a bitwise op on a float type, or an out-of-range enum.
ReduceKernel portable_kernel(DataType type, ReduceOp op);

// AVX2 (+F16C) kernels (reduction_avx2.cc), with the same nullptr cases. Call only when
// cpu_has_avx2_kernels().
ReduceKernel avx2_kernel(DataType type, ReduceOp op);

// Whether this CPU (and OS) supports AVX2, F16C and FMA.
bool cpu_has_avx2_kernels();

// The family reduce_into/reduce_to use: AVX2 where the CPU has it, unless GLOO_LITE_SIMD=portable.
// Decided once, at first use.
KernelFamily active_kernel_family();

// The kernel of `family` (which must be usable on this CPU) for `type` and `op`.
ReduceKernel kernel_of(KernelFamily family, DataType type, ReduceOp op);

// Conversions with the F16C / AVX2 instructions of the AVX2 kernels, exposed so that tests can
// check them against float16_bits.h. Call only when cpu_has_avx2_kernels().
void avx2_half_to_float(const uint16_t* in, float* out, size_t count);
void avx2_float_to_half(const float* in, uint16_t* out, size_t count);
void avx2_bfloat16_to_float(const uint16_t* in, float* out, size_t count);
void avx2_float_to_bfloat16(const float* in, uint16_t* out, size_t count);

}  // namespace gloo_lite::detail
