// Independent reference arithmetic for the reduction tests: 16-bit float formats decoded by their
// defining formula into double and rounded back by scaling to the format's ulp and rounding to
// nearest-even in double; no bit tricks shared with the library.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

namespace gloo_lite::test {

struct FloatFormat {
  int mantissa_bits;  // stored (explicit) mantissa bits
  int exponent_bits;
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  int min_exponent() const { return 1 - bias(); }
  int max_exponent() const { return bias(); }
};

constexpr FloatFormat kHalfFormat{10, 5};
constexpr FloatFormat kBFloat16Format{7, 8};

// The value of a 16-bit pattern (NaN for any NaN).
double reference_decode(uint16_t bits, FloatFormat format);
// The pattern nearest to `value`, ties to even, overflow to inf; NaN gives a quiet NaN.
uint16_t reference_encode(double value, FloatFormat format);
bool is_nan_bits(uint16_t bits, FloatFormat format);

inline uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline uint64_t bits_of(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace gloo_lite::test
