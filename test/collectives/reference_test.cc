// Checks of the reference itself: a matrix that passes must be able to fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "test/collectives/formats.h"
#include "test/collectives/reference.h"

namespace gloo_lite::test {
namespace {

Inputs inputs_of(DataType type, Pattern pattern, int ranks) {
  Inputs inputs;
  inputs.type = type;
  inputs.pattern = pattern;
  inputs.seed = 42;
  inputs.ranks = ranks;
  return inputs;
}

TEST(CollectiveReference, HalfAndBFloat16RoundTripEveryFiniteValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t b = static_cast<uint16_t>(bits);
    if ((b & 0x7C00) != 0x7C00) {
      ASSERT_EQ(float_to_half_bits(static_cast<float>(half_to_double(b))), b) << bits;
    }
    if ((b & 0x7F80) != 0x7F80) {
      ASSERT_EQ(float_to_bfloat16_bits(static_cast<float>(bfloat16_to_double(b))), b) << bits;
    }
  }
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1p-11f), 0x3C00);  // a tie rounds to even
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);         // overflows to infinity
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000);         // half the least subnormal: even
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + 0x1p-8f), 0x3F80);
}

// Sums the inputs of every rank in the order given, in the element type.
template <typename T>
std::vector<T> ordered_sum(const Inputs& inputs, size_t count, bool reverse) {
  std::vector<T> sum(count), one(count);
  for (int k = 0; k < inputs.ranks; ++k) {
    int rank = reverse ? inputs.ranks - 1 - k : k;
    fill_inputs(inputs, rank, 0, count, one.data());
    for (size_t i = 0; i < count; ++i) sum[i] = k == 0 ? one[i] : static_cast<T>(sum[i] + one[i]);
  }
  return sum;
}

TEST(CollectiveReference, FloatSumsAcceptOtherOrdersAndRejectErrors) {
  Inputs inputs = inputs_of(DataType::kFloat32, Pattern::kAdditive, 13);
  std::vector<float> sum = ordered_sum<float>(inputs, 1000, true);
  Problems problems;
  check_reduction(inputs, ReduceOp::kSum, 0, sum.size(), sum.data(), "reversed", problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  sum[17] *= 1.001f;
  check_reduction(inputs, ReduceOp::kSum, 0, sum.size(), sum.data(), "perturbed", problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("[17]"), std::string::npos) << problems[0];
}

TEST(CollectiveReference, IntegerResultsAreExact) {
  Inputs inputs = inputs_of(DataType::kInt64, Pattern::kAdditive, 16);
  std::vector<int64_t> sum = ordered_sum<int64_t>(inputs, 100, false);
  Problems problems;
  check_reduction(inputs, ReduceOp::kSum, 0, sum.size(), sum.data(), "sum", problems);
  EXPECT_TRUE(problems.empty());
  sum[3] += 1;
  check_reduction(inputs, ReduceOp::kSum, 0, sum.size(), sum.data(), "off by one", problems);
  EXPECT_EQ(problems.size(), 1u);
}

TEST(CollectiveReference, CustomOperationCountsEveryCombination) {
  // a + b + 1 over P ranks is sum + (P - 1): one combination too many or too few shows.
  Inputs inputs = inputs_of(DataType::kUint8, Pattern::kAdditive, 16);
  ReduceFunction plus_one = plus_one_function(DataType::kUint8);
  std::vector<uint8_t> acc(50), one(50);
  fill_inputs(inputs, 0, 0, acc.size(), acc.data());
  for (int rank = 1; rank < inputs.ranks; ++rank) {
    fill_inputs(inputs, rank, 0, one.size(), one.data());
    plus_one(acc.data(), one.data(), acc.size());
  }
  Problems problems;
  check_reduction(inputs, ReduceOp::kCustom, 0, acc.size(), acc.data(), "custom", problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  std::vector<uint8_t> zeros(50, 0);
  plus_one(acc.data(), zeros.data(), acc.size());  // an extra combination with an "identity"
  check_reduction(inputs, ReduceOp::kCustom, 0, acc.size(), acc.data(), "seeded", problems);
  EXPECT_EQ(problems.size(), 1u);
}

TEST(CollectiveReference, IntegerProductsStaySmall) {
  // Inputs are +-1 except a factor 3 on one rank and 2 on another, so |product| <= 6 and even
  // int8 never overflows; a zero product can only come from a bug.
  Inputs inputs = inputs_of(DataType::kInt8, Pattern::kProduct, 16);
  std::vector<int8_t> product(100, 1), one(100);
  for (int rank = 0; rank < inputs.ranks; ++rank) {
    fill_inputs(inputs, rank, 0, one.size(), one.data());
    for (size_t i = 0; i < one.size(); ++i) product[i] = static_cast<int8_t>(product[i] * one[i]);
  }
  for (int8_t value : product) EXPECT_TRUE(value != 0 && value >= -6 && value <= 6) << +value;
  Problems problems;
  check_reduction(inputs, ReduceOp::kProd, 0, product.size(), product.data(), "prod", problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  std::vector<int8_t> zero(100, 0);
  check_reduction(inputs, ReduceOp::kProd, 0, zero.size(), zero.data(), "zero", problems);
  EXPECT_EQ(problems.size(), 1u);
}

TEST(CollectiveReference, GuardsSeeWritesJustOutside) {
  GuardedBuffer buffer(10);
  EXPECT_EQ(buffer.damaged_guard(), "");
  buffer.data()[10] ^= 1;
  EXPECT_NE(buffer.damaged_guard(), "");
  buffer.data()[10] ^= 1;
  buffer.data()[-1] ^= 1;
  EXPECT_NE(buffer.damaged_guard(), "");
}

}  // namespace
}  // namespace gloo_lite::test
