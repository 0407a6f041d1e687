// Internal: scalar conversions between float and the two 16-bit float formats, inline so that
// the portable reduction kernels (reduction.cc) can inline them into their loops; types.cc
// exports them as float_to_half() & co. Not included by reduction_avx2.cc on purpose: an inline
// function compiled there with -mavx2 could be the copy the linker keeps for every caller.
//
// Formats (IEEE 754-2008 binary16; bfloat16 = the top half of a binary32):
//   float16:  1 sign, 5 exponent (bias 15), 10 mantissa bits; subnormals below 2^-14.
//   bfloat16: 1 sign, 8 exponent (bias 127), 7 mantissa bits; same range as float.
// Narrowing rounds to nearest, ties to even; overflow gives inf; NaN stays NaN with its sign and
// the top payload bits, made quiet (as F16C's vcvtps2ph does, so both kernel families agree).
#pragma once

#include <cstdint>
#include <cstring>

namespace gloo_lite::detail {

inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// The conversions have no branches, so that compilers vectorise the portable kernel loops. A
// floating-point result must not be chosen by ?: either: GCC sinks its computation into the
// branch it turns ?: into and then, under the default -ftrapping-math, may not if-convert it
// back. Hence select(), a bit mask, below, and float_to_half_bits using its addition for all
// inputs.

inline uint32_t select(bool condition, uint32_t if_true, uint32_t if_false) {
  const uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return (if_true & mask) | (if_false & ~mask);
}

inline float half_bits_to_float(uint16_t half) {
  const uint32_t sign = uint32_t{half & 0x8000u} << 16;
  const int32_t magnitude = half & 0x7fff;
  // inf or NaN: all-ones exponent, payload moved to the top of the float mantissa; a signalling
  // NaN becomes quiet (the widening conversion of F16C does the same).
  const uint32_t special = 0x7f800000u | (static_cast<uint32_t>(magnitude & 0x3ff) << 13) |
                           (magnitude > 0x7c00 ? 0x00400000u : 0u);
  // Normal: the exponent field moves from bias 15 to bias 127 (+112).
  const uint32_t normal = (static_cast<uint32_t>(magnitude) << 13) + (112u << 23);
  // Zero or subnormal: magnitude * 2^-24, exact in float (the result is a normal float).
  const uint32_t subnormal = float_bits(static_cast<float>(magnitude) * 0x1p-24f);
  const uint32_t bits =
      select(magnitude >= 0x7c00, special, select(magnitude >= 0x0400, normal, subnormal));
  return bits_float(sign | bits);
}

inline uint16_t float_to_half_bits(float value) {
  const uint32_t bits = float_bits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const auto magnitude = static_cast<int32_t>(bits & 0x7fffffffu);
  // One floating-point addition rounds every finite value to nearest-even at its half ulp:
  // adding M = 2^(E+13), where 2^E <= |value| < 2^(E+1) and E is clamped to at least -14 (the
  // exponent of the subnormals), gives a sum whose ulp, 2^(E-10), is the half ulp of the value.
  // The sum's mantissa minus M's then counts half ulps above 2^E (1024..2048 for normals, 0..1024
  // below 2^-14), so the half is (E + 14) << 10 plus that count; a count of 2048 carries into
  // the exponent, which is how rounding up to the next binade, or to inf, happens. Magnitudes
  // from 65520 (the tie above the largest half, 65504) up, inf and NaN included, are clamped to
  // 65520, which rounds to inf; NaN then ORs in the quiet bit and the top 10 payload bits. The
  // addition must round to nearest-even (the default mode); flushing subnormal floats to zero
  // is harmless, as they are far below half a half ulp.
  const int32_t clamped = magnitude < 0x477ff000 ? magnitude : 0x477ff000;
  const int32_t exponent = (clamped >> 23) > 113 ? (clamped >> 23) : 113;  // biased E + 127
  const auto magic = static_cast<uint32_t>(exponent + 13) << 23;
  const uint32_t sum = float_bits(bits_float(static_cast<uint32_t>(clamped)) + bits_float(magic));
  const uint32_t finite = (static_cast<uint32_t>(exponent - 113) << 10) + (sum - magic);
  const uint32_t nan = magnitude > 0x7f800000 ? 0x0200u | ((bits >> 13) & 0x3ffu) : 0u;
  return static_cast<uint16_t>(sign | finite | nan);
}

inline float bfloat16_bits_to_float(uint16_t bf16) {
  const uint32_t bits = uint32_t{bf16} << 16;
  const bool nan = static_cast<int32_t>(bits & 0x7fffffffu) > 0x7f800000;
  return bits_float(nan ? bits | 0x00400000u : bits);  // NaN: made quiet
}

inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t bits = float_bits(value);
  const bool nan = static_cast<int32_t>(bits & 0x7fffffffu) > 0x7f800000;
  // Round to nearest-even on the 16 dropped bits; the carry can reach the exponent (and inf).
  // A NaN is truncated and made quiet instead (rounding could carry its payload into inf).
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? (bits >> 16) | 0x0040u : rounded);
}

}  // namespace gloo_lite::detail
