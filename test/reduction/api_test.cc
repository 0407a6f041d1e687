// The rest of the reduction API: names and parsing, finish_average, custom operations, NaN and
// wrap-around rules spelled out on small cases, dispatch, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/reduction.h"
#include "gloo_lite/reduction_kernels.h"
#include "reference.h"

namespace gloo_lite::test {
namespace {

constexpr DataType kAllTypes[] = {
    DataType::kInt8,    DataType::kUint8,   DataType::kInt32,   DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,  DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat32, DataType::kFloat64,
};

TEST(TypeNames, RoundTripAndSizes) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  for (size_t i = 0; i < std::size(kAllTypes); ++i) {
    EXPECT_EQ(parse_type(type_name(kAllTypes[i])), kAllTypes[i]);
    EXPECT_EQ(element_size(kAllTypes[i]), sizes[i]) << type_name(kAllTypes[i]);
  }
  for (const ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg,
        ReduceOp::kCustom, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
    EXPECT_EQ(parse_op(op_name(op)), op);
  }
  EXPECT_STREQ(type_name(DataType::kBFloat16), "bfloat16");
  EXPECT_STREQ(op_name(ReduceOp::kAvg), "avg");
  EXPECT_STREQ(op_name(ReduceOp::kBand), "band");
  EXPECT_STREQ(op_name(ReduceOp::kBor), "bor");
  EXPECT_STREQ(op_name(ReduceOp::kBxor), "bxor");
  EXPECT_EQ(parse_op("BXOR"), ReduceOp::kBxor);
  // The C ABI released 0..5; the bitwise ops follow.
  EXPECT_EQ(static_cast<int>(ReduceOp::kCustom), 5);
  EXPECT_EQ(static_cast<int>(ReduceOp::kBand), 6);
  EXPECT_EQ(static_cast<int>(ReduceOp::kBxor), 8);
  EXPECT_THROW(op_name(static_cast<ReduceOp>(9)), InvalidArgument);
}

TEST(TypeNames, AcceptsNcclTestsShortForms) {
  EXPECT_EQ(parse_type("int"), DataType::kInt32);
  EXPECT_EQ(parse_type("half"), DataType::kFloat16);
  EXPECT_EQ(parse_type("fp16"), DataType::kFloat16);
  EXPECT_EQ(parse_type("bf16"), DataType::kBFloat16);
  EXPECT_EQ(parse_type("float"), DataType::kFloat32);
  EXPECT_EQ(parse_type("fp32"), DataType::kFloat32);
  EXPECT_EQ(parse_type("double"), DataType::kFloat64);
  EXPECT_EQ(parse_type("fp64"), DataType::kFloat64);
  EXPECT_EQ(parse_type("uint64"), DataType::kUint64);
  EXPECT_EQ(parse_type("Float"), DataType::kFloat32);  // case does not matter
  EXPECT_EQ(parse_op("MAX"), ReduceOp::kMax);
}

TEST(TypeNames, RejectsUnknownNamesListingTheAccepted) {
  try {
    parse_type("float8");
    FAIL() << "parse_type accepted float8";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("float8"), std::string::npos) << what;
    EXPECT_NE(what.find("bfloat16/bf16"), std::string::npos) << what;
    EXPECT_NE(what.find("float32/float/fp32"), std::string::npos) << what;
  }
  try {
    parse_op("mean");
    FAIL() << "parse_op accepted mean";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("sum, prod, min, max, avg"), std::string::npos);
  }
  EXPECT_THROW(parse_type(""), InvalidArgument);
  EXPECT_THROW(element_size(static_cast<DataType>(99)), InvalidArgument);
  EXPECT_THROW(op_name(static_cast<ReduceOp>(99)), InvalidArgument);
}

TEST(FinishAverage, IntegersTruncateTowardZero) {
  std::vector<int32_t> values = {-7, 7, -1, 1, 0, std::numeric_limits<int32_t>::min()};
  finish_average(values.data(), values.size(), DataType::kInt32, 2);
  EXPECT_EQ(values, (std::vector<int32_t>{-3, 3, 0, 0, 0, -1073741824}));
  std::vector<int8_t> small = {-128, 127, -5};
  finish_average(small.data(), small.size(), DataType::kInt8, 3);
  EXPECT_EQ(small, (std::vector<int8_t>{-42, 42, -1}));
  std::vector<uint64_t> big = {~uint64_t{0}, 5};
  finish_average(big.data(), big.size(), DataType::kUint64, 4);
  EXPECT_EQ(big, (std::vector<uint64_t>{~uint64_t{0} / 4, 1}));
  std::vector<uint32_t> u32 = {0xffffffffu};
  finish_average(u32.data(), u32.size(), DataType::kUint32, 3);
  EXPECT_EQ(u32[0], 0x55555555u);
}

TEST(FinishAverage, FloatsDivideInTheirType) {
  std::vector<float> f = {1.0f, 1e-45f, -3.0f, NAN};
  finish_average(f.data(), f.size(), DataType::kFloat32, 3);
  EXPECT_EQ(f[0], 1.0f / 3.0f);
  EXPECT_EQ(f[1], 0.0f);  // the smallest subnormal / 3 rounds to zero
  EXPECT_EQ(f[2], -1.0f);
  EXPECT_TRUE(std::isnan(f[3]));
  std::vector<double> d = {1.0, 2.0};
  finish_average(d.data(), d.size(), DataType::kFloat64, 3);
  EXPECT_EQ(d[0], 1.0 / 3.0);
  EXPECT_EQ(d[1], 2.0 / 3.0);
}

TEST(FinishAverage, SixteenBitFloatsRoundToNearestEven) {
  // Every pattern divided by several P, against the double reference.
  for (const int ranks : {1, 2, 3, 7, 1000}) {
    std::vector<uint16_t> half(65536), bf16(65536);
    for (size_t i = 0; i < half.size(); ++i) half[i] = bf16[i] = static_cast<uint16_t>(i);
    finish_average(half.data(), half.size(), DataType::kFloat16, ranks);
    finish_average(bf16.data(), bf16.size(), DataType::kBFloat16, ranks);
    for (uint32_t i = 0; i < 65536; ++i) {
      const auto bits = static_cast<uint16_t>(i);
      const std::pair<FloatFormat, uint16_t> results[] = {{kHalfFormat, half[i]},
                                                          {kBFloat16Format, bf16[i]}};
      for (const auto& [format, got] : results) {
        const double value = reference_decode(bits, format);
        if (std::isnan(value)) {
          ASSERT_TRUE(is_nan_bits(got, format));
        } else {
          ASSERT_EQ(got, reference_encode(value / ranks, format))
              << std::hex << "pattern 0x" << i << " ranks " << std::dec << ranks;
        }
      }
    }
  }
}

TEST(FinishAverage, RejectsNonPositiveRanks) {
  float x = 1;
  EXPECT_THROW(finish_average(&x, 1, DataType::kFloat32, 0), InvalidArgument);
  EXPECT_THROW(finish_average(&x, 1, DataType::kFloat32, -2), InvalidArgument);
}

TEST(Average, SumsThenDivides) {
  std::vector<int32_t> acc = {1, -5, 10};
  const std::vector<int32_t> r1 = {2, -5, 11}, r2 = {4, -6, 10};
  reduce_into(acc.data(), r1.data(), acc.size(), DataType::kInt32, ReduceOp::kAvg);
  reduce_into(acc.data(), r2.data(), acc.size(), DataType::kInt32, ReduceOp::kAvg);
  finish_average(acc.data(), acc.size(), DataType::kInt32, 3);
  EXPECT_EQ(acc, (std::vector<int32_t>{2, -5, 10}));  // 7/3, -16/3, 31/3 truncated
}

TEST(CustomOp, CallsTheFunctionOnceWithTheWholeRange) {
  int calls = 0;
  // Saturating int32 add: commutative and associative enough for the test.
  const ReduceFunction saturating = [&calls](void* inout, const void* in, size_t count) {
    ++calls;
    auto* x = static_cast<int32_t*>(inout);
    const auto* y = static_cast<const int32_t*>(in);
    for (size_t i = 0; i < count; ++i) {
      const int64_t s = int64_t{x[i]} + y[i];
      x[i] = static_cast<int32_t>(std::min<int64_t>(s, std::numeric_limits<int32_t>::max()));
    }
  };
  const int32_t big = std::numeric_limits<int32_t>::max() - 1;
  std::vector<int32_t> a = {1, big, 3}, b = {10, 5, 30}, dst(3, -1);
  reduce_into(a.data(), b.data(), 3, DataType::kInt32, ReduceOp::kCustom, saturating);
  EXPECT_EQ(a, (std::vector<int32_t>{11, std::numeric_limits<int32_t>::max(), 33}));
  EXPECT_EQ(calls, 1);
  a = {1, 2, 3};
  reduce_to(dst.data(), a.data(), b.data(), 3, DataType::kInt32, ReduceOp::kCustom, saturating);
  EXPECT_EQ(dst, (std::vector<int32_t>{11, 7, 33}));
  EXPECT_EQ(a, (std::vector<int32_t>{1, 2, 3}));  // inputs untouched
  reduce_to(b.data(), a.data(), b.data(), 3, DataType::kInt32, ReduceOp::kCustom, saturating);
  EXPECT_EQ(b, (std::vector<int32_t>{11, 7, 33}));
  reduce_to(a.data(), a.data(), b.data(), 3, DataType::kInt32, ReduceOp::kCustom, saturating);
  EXPECT_EQ(a, (std::vector<int32_t>{12, 9, 36}));
  EXPECT_EQ(calls, 4);
  reduce_into(a.data(), b.data(), 0, DataType::kInt32, ReduceOp::kCustom, saturating);
  EXPECT_EQ(calls, 4);  // nothing to combine
}

TEST(CustomOp, WithoutAFunctionIsAnError) {
  int32_t x = 0;
  EXPECT_THROW(reduce_into(&x, &x, 1, DataType::kInt32, ReduceOp::kCustom), InvalidArgument);
}

TEST(Reduce, ZeroCountTouchesNothing) {
  reduce_into(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum);
  reduce_to(nullptr, nullptr, nullptr, 0, DataType::kFloat16, ReduceOp::kMax);
  finish_average(nullptr, 0, DataType::kBFloat16, 4);
}

TEST(Reduce, InvalidEnumsAreErrors) {
  int32_t x = 0;
  EXPECT_THROW(reduce_into(&x, &x, 1, static_cast<DataType>(42), ReduceOp::kSum), InvalidArgument);
  EXPECT_THROW(reduce_into(&x, &x, 1, DataType::kInt32, static_cast<ReduceOp>(42)),
               InvalidArgument);
}

// Small explicit cases of the documented rules, through every family.
class Rules : public ::testing::TestWithParam<detail::KernelFamily> {
 protected:
  void SetUp() override {
    if (GetParam() == detail::KernelFamily::kAvx2 && !detail::cpu_has_avx2_kernels()) {
      GTEST_SKIP() << "CPU lacks AVX2/F16C/FMA";
    }
  }
  template <typename T>
  std::vector<T> combine(DataType type, ReduceOp op, std::vector<T> a, const std::vector<T>& b) {
    detail::kernel_of(GetParam(), type, op)(a.data(), a.data(), b.data(), a.size());
    return a;
  }
};

// Bitwise ops act on the two's-complement bits: sign bits and negative values included.
TEST_P(Rules, BitwiseOnTheBits) {
  EXPECT_EQ(combine<int8_t>(DataType::kInt8, ReduceOp::kBand, {-1, -128, 0x55}, {5, -1, 0x0f}),
            (std::vector<int8_t>{5, -128, 0x05}));
  EXPECT_EQ(combine<uint8_t>(DataType::kUint8, ReduceOp::kBor, {0x80, 0x0f}, {0x01, 0xf0}),
            (std::vector<uint8_t>{0x81, 0xff}));
  EXPECT_EQ(combine<int32_t>(DataType::kInt32, ReduceOp::kBxor, {-1}, {0x0f0f0f0f})[0],
            ~int32_t{0x0f0f0f0f});
  EXPECT_EQ(combine<uint32_t>(DataType::kUint32, ReduceOp::kBand, {0xffff0000u}, {0x0ff00ff0u})[0],
            0x0ff00000u);
  EXPECT_EQ(combine<int64_t>(DataType::kInt64, ReduceOp::kBor,
                             {std::numeric_limits<int64_t>::min()}, {1})[0],
            std::numeric_limits<int64_t>::min() + 1);
  EXPECT_EQ(combine<uint64_t>(DataType::kUint64, ReduceOp::kBxor, {0xffffffffffffffffull},
                              {0x8000000000000001ull})[0],
            0x7ffffffffffffffeull);
}

TEST_P(Rules, IntegersWrap) {
  const int32_t max32 = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(combine<int32_t>(DataType::kInt32, ReduceOp::kSum, {max32}, {1})[0],
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(combine<int8_t>(DataType::kInt8, ReduceOp::kProd, {16, -128}, {16, -1}),
            (std::vector<int8_t>{0, -128}));
  EXPECT_EQ(combine<uint8_t>(DataType::kUint8, ReduceOp::kSum, {200}, {100})[0], 44);
  EXPECT_EQ(combine<int64_t>(DataType::kInt64, ReduceOp::kProd, {int64_t{1} << 62}, {4})[0], 0);
  EXPECT_EQ(combine<uint64_t>(DataType::kUint64, ReduceOp::kProd, {0xffffffffffffffffull},
                              {0xffffffffffffffffull})[0],
            1u);
  EXPECT_EQ(combine<uint64_t>(DataType::kUint64, ReduceOp::kMin, {1ull << 63}, {1})[0], 1u);
  EXPECT_EQ(combine<int64_t>(DataType::kInt64, ReduceOp::kMax, {-1}, {-2})[0], -1);
  EXPECT_EQ(combine<uint32_t>(DataType::kUint32, ReduceOp::kMax, {1u << 31}, {1})[0], 1u << 31);
}

TEST_P(Rules, MinMaxPropagateNaNFromEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    const auto f = combine<float>(DataType::kFloat32, op, {nan, 1.0f, nan}, {1.0f, nan, nan});
    for (const float x : f) EXPECT_TRUE(std::isnan(x)) << op_name(op);
    const auto d = combine<double>(DataType::kFloat64, op, {NAN, 2.0}, {2.0, NAN});
    for (const double x : d) EXPECT_TRUE(std::isnan(x)) << op_name(op);
    const uint16_t one_half = float_to_half(1.0f), one_bf16 = float_to_bfloat16(1.0f);
    for (const uint16_t x :
         combine<uint16_t>(DataType::kFloat16, op, {0x7e00, one_half}, {one_half, 0x7e00})) {
      EXPECT_TRUE(std::isnan(half_to_float(x)));
    }
    for (const uint16_t x :
         combine<uint16_t>(DataType::kBFloat16, op, {0x7fc0, one_bf16}, {one_bf16, 0x7fc0})) {
      EXPECT_TRUE(std::isnan(bfloat16_to_float(x)));
    }
  }
  EXPECT_EQ(combine<float>(DataType::kFloat32, ReduceOp::kMin, {-INFINITY, 3}, {2, 1}),
            (std::vector<float>{-INFINITY, 1}));
}

TEST_P(Rules, SixteenBitSumsRoundOnce) {
  // 2048 + 1 in float16 is a tie between 2048 and 2050: to even, 2048.
  const uint16_t x = float_to_half(2048), one = float_to_half(1);
  EXPECT_EQ(combine<uint16_t>(DataType::kFloat16, ReduceOp::kSum, {x}, {one})[0], x);
  // 65504 + 16 = 65520 rounds (tie, odd) to inf.
  EXPECT_EQ(combine<uint16_t>(DataType::kFloat16, ReduceOp::kSum, {0x7bff}, {float_to_half(16)})[0],
            0x7c00);
  // Subnormal results: 2^-24 + 2^-24.
  EXPECT_EQ(combine<uint16_t>(DataType::kFloat16, ReduceOp::kSum, {0x0001}, {0x0001})[0], 0x0002);
  // bfloat16: 256 + 1 is a tie between 256 and 258: to even, 256.
  const uint16_t b = float_to_bfloat16(256);
  EXPECT_EQ(combine<uint16_t>(DataType::kBFloat16, ReduceOp::kSum, {b}, {float_to_bfloat16(1)})[0],
            b);
}

INSTANTIATE_TEST_SUITE_P(Families, Rules,
                         ::testing::Values(detail::KernelFamily::kPortable,
                                           detail::KernelFamily::kAvx2),
                         [](const auto& info) {
                           return std::string(
                               info.param == detail::KernelFamily::kAvx2 ? "avx2" : "portable");
                         });

// The dispatch follows the CPU and GLOO_LITE_SIMD (CMake also runs this binary with
// GLOO_LITE_SIMD=portable).
TEST(Dispatch, FollowsCpuAndKnob) {
  const char* knob = std::getenv("GLOO_LITE_SIMD");
  const bool forced_portable = knob != nullptr && std::string(knob) == "portable";
  const bool avx2 = !forced_portable && detail::cpu_has_avx2_kernels();
  EXPECT_STREQ(reduction_isa(), avx2 ? "avx2+f16c" : "portable");
  EXPECT_EQ(detail::active_kernel_family(),
            avx2 ? detail::KernelFamily::kAvx2 : detail::KernelFamily::kPortable);
}

}  // namespace
}  // namespace gloo_lite::test
