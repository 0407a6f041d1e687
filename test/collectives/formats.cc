#include "test/collectives/formats.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace gloo_lite::test {

double half_to_double(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) {
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  }
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double bfloat16_to_double(uint16_t bits) {
  uint32_t wide = uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t float_to_half_bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t magnitude = x & 0x7FFFFFFF;
  if (magnitude >= 0x7F800000) return sign | (magnitude > 0x7F800000 ? 0x7E00 : 0x7C00);
  if (magnitude >= 0x477FF000) return sign | 0x7C00;  // >= 65520 rounds to infinity
  if (magnitude < 0x38800000) {                       // below 2^-14: subnormal (or zero)
    float scaled;
    std::memcpy(&scaled, &magnitude, sizeof(scaled));
    // Exact scaling by 2^24, then the current (nearest-even) rounding mode.
    return sign | static_cast<uint16_t>(std::nearbyint(scaled * 16777216.0f));
  }
  uint32_t rounded = (magnitude + 0xFFF + ((magnitude >> 13) & 1)) >> 13;
  return sign | static_cast<uint16_t>(rounded - (112u << 10));
}

uint16_t float_to_bfloat16_bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

}  // namespace gloo_lite::test
