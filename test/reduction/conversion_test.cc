// float16 / bfloat16 <-> float: exhaustive over the 16-bit patterns, every rounding tie, overflow,
// subnormals and NaN, against the reference in reference.cc; and the AVX2/F16C conversions of
// the vector kernels against the scalar ones, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gloo_lite/reduction_kernels.h"
#include "gloo_lite/types.h"
#include "reference.h"

namespace gloo_lite::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Format16 {
  const char* name;
  FloatFormat format;
  uint16_t (*narrow)(float);
  float (*widen)(uint16_t);
  uint16_t quiet_bit;
  uint16_t largest_finite;
};

const Format16 kHalf{"float16", kHalfFormat, &float_to_half, &half_to_float, 0x0200, 0x7bff};
const Format16 kBFloat16{"bfloat16",         kBFloat16Format, &float_to_bfloat16,
                         &bfloat16_to_float, 0x0040,          0x7f7f};

class Conversion : public ::testing::TestWithParam<Format16> {};

TEST_P(Conversion, WidensEveryPatternExactly) {
  const Format16& f = GetParam();
  for (uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const auto bits = static_cast<uint16_t>(pattern);
    const float widened = f.widen(bits);
    const double expected = reference_decode(bits, f.format);
    SCOPED_TRACE(::testing::Message() << "pattern 0x" << std::hex << pattern);
    ASSERT_EQ(std::signbit(widened), (bits & 0x8000) != 0);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(widened));
      ASSERT_NE(bits_of(widened) & 0x00400000u, 0u) << "NaN must come out quiet";
    } else {
      ASSERT_EQ(static_cast<double>(widened), expected);
    }
  }
}

TEST_P(Conversion, RoundTripsEveryPattern) {
  const Format16& f = GetParam();
  for (uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const auto bits = static_cast<uint16_t>(pattern);
    const uint16_t back = f.narrow(f.widen(bits));
    if (is_nan_bits(bits, f.format)) {
      // Sign and payload survive; a signalling NaN becomes quiet.
      ASSERT_EQ(back, bits | f.quiet_bit) << std::hex << pattern;
    } else {
      ASSERT_EQ(back, bits) << std::hex << pattern;
    }
  }
}

// Halfway between every pair of neighbours (exact in float) the result is the even one; one float
// ulp either side it is the nearer one. Covers subnormals, binade edges and the overflow edge.
TEST_P(Conversion, RoundsTiesToEvenEverywhere) {
  const Format16& f = GetParam();
  for (uint16_t low = 0; low <= f.largest_finite; ++low) {
    const double low_value = reference_decode(low, f.format);
    // Above the largest finite value the next neighbour is 2^(emax+1), where inf takes over.
    const double high_value = low == f.largest_finite
                                  ? std::ldexp(1.0, f.format.max_exponent() + 1)
                                  : reference_decode(static_cast<uint16_t>(low + 1), f.format);
    const auto high = static_cast<uint16_t>(low + 1);  // 0x7c00 / 0x7f80 (inf) after the last
    const auto mid = static_cast<float>((low_value + high_value) / 2);
    ASSERT_EQ(static_cast<double>(mid), (low_value + high_value) / 2) << "midpoint not exact";
    for (const uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const float s = sign != 0 ? -1.0f : 1.0f;
      SCOPED_TRACE(::testing::Message() << std::hex << "low 0x" << low << " sign 0x" << sign);
      ASSERT_EQ(f.narrow(s * mid), (low & 1) == 0 ? (sign | low) : (sign | high));
      ASSERT_EQ(f.narrow(s * std::nextafter(mid, 0.0f)), sign | low);
      ASSERT_EQ(f.narrow(s * std::nextafter(mid, kInf)), sign | high);
    }
  }
}

TEST_P(Conversion, MatchesReferenceOnFloatSweep) {
  const Format16& f = GetParam();
  // About four million float patterns spread over all exponents, signs and NaN payloads.
  for (uint64_t pattern = 0; pattern <= 0xffffffffull; pattern += 1021) {
    const float value = float_of(static_cast<uint32_t>(pattern));
    const uint16_t got = f.narrow(value);
    const uint16_t expected = reference_encode(value, f.format);
    if (std::isnan(value)) {
      ASSERT_TRUE(is_nan_bits(got, f.format)) << std::hex << pattern;
      ASSERT_NE(got & f.quiet_bit, 0) << std::hex << pattern;
      ASSERT_EQ(got & 0x8000, expected & 0x8000);
    } else {
      ASSERT_EQ(got, expected) << std::hex << "float 0x" << pattern;
    }
  }
}

TEST_P(Conversion, OverflowsToInfinity) {
  const Format16& f = GetParam();
  const auto inf =
      static_cast<uint16_t>(((1u << f.format.exponent_bits) - 1) << f.format.mantissa_bits);
  const float inf_f = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f.narrow(inf_f), inf);
  EXPECT_EQ(f.narrow(-inf_f), inf | 0x8000);
  EXPECT_EQ(f.narrow(std::numeric_limits<float>::max()), inf);
  EXPECT_EQ(f.narrow(std::numeric_limits<float>::lowest()), inf | 0x8000);
  const float largest = f.widen(f.largest_finite);
  EXPECT_EQ(f.narrow(largest), f.largest_finite);
  EXPECT_EQ(f.narrow(-largest), f.largest_finite | 0x8000);
  EXPECT_TRUE(std::isinf(f.widen(inf)));
}

TEST_P(Conversion, KeepsNaN) {
  const Format16& f = GetParam();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(is_nan_bits(f.narrow(nan), f.format));
  EXPECT_TRUE(is_nan_bits(f.narrow(-nan), f.format));
  EXPECT_NE(f.narrow(-nan) & 0x8000, 0);
  // A signalling NaN whose payload lies only in bits that narrowing drops must not become inf.
  const float signalling_low = float_of(0x7f800001u);
  EXPECT_TRUE(is_nan_bits(f.narrow(signalling_low), f.format));
  EXPECT_NE(f.narrow(signalling_low) & f.quiet_bit, 0);
  // The top payload bits are kept.
  const float payload = float_of(0x7fa00000u);  // signalling, payload bit 21 only
  EXPECT_EQ(f.narrow(payload) & 0x7fff,
            f.narrow(std::numeric_limits<float>::infinity()) | f.quiet_bit | (f.quiet_bit >> 1));
}

INSTANTIATE_TEST_SUITE_P(Formats, Conversion, ::testing::Values(kHalf, kBFloat16),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HalfConversion, Subnormals) {
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie: to even (zero)
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 units: tie to even 2
  EXPECT_EQ(float_to_half(std::ldexp(5.0f, -25)), 0x0002);     // 2.5 units: tie to even 2
  EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);  // tie: up to the smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -30)), 0x8000);  // underflow keeps the sign
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_to_float(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

TEST(HalfConversion, KnownValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie: even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie: even (up)
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

TEST(BFloat16Conversion, KnownValuesAndSubnormals) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f808000u)), 0x3f80);  // tie: even
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f818000u)), 0x3f82);  // tie: even (up)
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bfloat16(float_of(0x00008000u)), 0x0000);  // subnormal tie
  EXPECT_EQ(float_to_bfloat16(float_of(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bfloat16(float_of(0x007fffffu)), 0x0080);  // to the smallest normal
  EXPECT_EQ(float_to_bfloat16(float_of(0x80008001u)), 0x8001);
  EXPECT_EQ(bfloat16_to_float(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(float_to_bfloat16(float_of(0x7f7f8000u)), 0x7f80);  // tie past the largest: inf
}

TEST(TypedWrappers, ConvertThroughTheScalarFunctions) {
  EXPECT_EQ(float16(1.5f).bits, 0x3e00);
  EXPECT_EQ(static_cast<float>(float16(1.5f)), 1.5f);
  EXPECT_EQ(bfloat16(-1.5f).bits, 0xbfc0);
  EXPECT_EQ(static_cast<float>(bfloat16(-1.5f)), -1.5f);
}

// The vector conversions the AVX2 kernels use agree with the scalar ones bit for bit.
class Avx2Conversion : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!detail::cpu_has_avx2_kernels()) GTEST_SKIP() << "CPU lacks AVX2/F16C/FMA";
  }
};

TEST_F(Avx2Conversion, WidensEveryPatternLikeScalar) {
  std::vector<uint16_t> patterns(65536 + 3);
  for (size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<uint16_t>(i);
  std::vector<float> out(patterns.size());
  detail::avx2_half_to_float(patterns.data(), out.data(), patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) {
    ASSERT_EQ(bits_of(out[i]), bits_of(half_to_float(patterns[i]))) << std::hex << i;
  }
  detail::avx2_bfloat16_to_float(patterns.data(), out.data(), patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) {
    ASSERT_EQ(bits_of(out[i]), bits_of(bfloat16_to_float(patterns[i]))) << std::hex << i;
  }
}

TEST_F(Avx2Conversion, NarrowsLikeScalar) {
  std::vector<float> values;
  for (uint64_t pattern = 0; pattern <= 0xffffffffull; pattern += 4093) {
    values.push_back(float_of(static_cast<uint32_t>(pattern)));
  }
  // Every tie of both formats, and its neighbours.
  for (uint32_t low = 0; low < 0x7c00; ++low) {
    const float mid = (half_to_float(static_cast<uint16_t>(low)) +
                       half_to_float(static_cast<uint16_t>(low + 1))) /
                      2;
    for (const float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, kInf)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  for (uint32_t low = 0; low < 0x7f80; ++low) {
    values.push_back(float_of((low << 16) | 0x8000u));
    values.push_back(float_of(((low << 16) | 0x8000u) | 0x80000000u));
  }
  values.push_back(float_of(0x7f800001u));
  values.push_back(float_of(0xffc00001u));
  std::vector<uint16_t> out(values.size());
  detail::avx2_float_to_half(values.data(), out.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(out[i], float_to_half(values[i])) << std::hex << bits_of(values[i]);
  }
  detail::avx2_float_to_bfloat16(values.data(), out.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(out[i], float_to_bfloat16(values[i])) << std::hex << bits_of(values[i]);
  }
}

}  // namespace
}  // namespace gloo_lite::test
