// The 16-bit float formats, implemented by the tests independently of gloo_lite/types.cc, so
// that the reference does not share a bug with the library.
#pragma once

#include <cstdint>

namespace gloo_lite::test {

double half_to_double(uint16_t bits);
double bfloat16_to_double(uint16_t bits);
uint16_t float_to_half_bits(float value);      // round to nearest even, overflow to infinity
uint16_t float_to_bfloat16_bits(float value);  // round to nearest even

}  // namespace gloo_lite::test
