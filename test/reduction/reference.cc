#include "reference.h"

#include <cmath>

namespace gloo_lite::test {

bool is_nan_bits(uint16_t bits, FloatFormat format) {
  const int exponent = (bits >> format.mantissa_bits) & ((1 << format.exponent_bits) - 1);
  const int mantissa = bits & ((1 << format.mantissa_bits) - 1);
  return exponent == (1 << format.exponent_bits) - 1 && mantissa != 0;
}

double reference_decode(uint16_t bits, FloatFormat format) {
  const bool negative = (bits & 0x8000) != 0;
  const int exponent = (bits >> format.mantissa_bits) & ((1 << format.exponent_bits) - 1);
  const int mantissa = bits & ((1 << format.mantissa_bits) - 1);
  double magnitude;
  if (exponent == (1 << format.exponent_bits) - 1) {
    if (mantissa != 0) return std::numeric_limits<double>::quiet_NaN();
    magnitude = std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {
    magnitude = std::ldexp(mantissa, format.min_exponent() - format.mantissa_bits);
  } else {
    magnitude = std::ldexp((1 << format.mantissa_bits) + mantissa,
                           exponent - format.bias() - format.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

uint16_t reference_encode(double value, FloatFormat format) {
  const int all_ones = (1 << format.exponent_bits) - 1;
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const uint16_t inf = static_cast<uint16_t>(sign | (all_ones << format.mantissa_bits));
  if (std::isnan(value)) return static_cast<uint16_t>(inf | (1 << (format.mantissa_bits - 1)));
  const double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return inf;
  if (magnitude == 0) return sign;
  int frexp_exponent;
  std::frexp(magnitude, &frexp_exponent);  // magnitude in [2^(e-1), 2^e)
  int exponent = frexp_exponent - 1;
  if (exponent < format.min_exponent()) exponent = format.min_exponent();
  // Units of the ulp at this exponent; the division by a power of two is exact, and nearbyint
  // rounds to nearest-even in the default rounding mode.
  double units = std::nearbyint(std::ldexp(magnitude, format.mantissa_bits - exponent));
  const double implicit_one = std::ldexp(1.0, format.mantissa_bits);
  if (units >= 2 * implicit_one) {  // rounded up to the next binade
    units /= 2;
    ++exponent;
  }
  if (exponent > format.max_exponent()) return inf;
  const auto count = static_cast<uint32_t>(units);
  if (units < implicit_one) return static_cast<uint16_t>(sign | count);  // subnormal or zero
  const uint32_t field = static_cast<uint32_t>(exponent + format.bias()) << format.mantissa_bits;
  return static_cast<uint16_t>(sign | field | (count - (1u << format.mantissa_bits)));
}

}  // namespace gloo_lite::test
