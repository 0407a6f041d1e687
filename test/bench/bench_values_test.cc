// gloo_lite_bench's check must never report a correct result as wrong: for every type, op and P,
// the library's own reduction of the benchmark's inputs must equal ValuePattern::reduced, and an
// unwritten (poisoned) or shifted output must count as wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "benchmark/bench_values.h"
#include "gloo_lite/reduction.h"

namespace gloo_lite::bench {
namespace {

constexpr DataType kTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                               DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                               DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                               DataType::kFloat64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kAvg, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};

TEST(BenchValues, LibraryReductionMatchesExpected) {
  constexpr size_t kCount = 1000;
  for (DataType type : kTypes) {
    size_t bytes = kCount * element_size(type);
    for (ReduceOp op : kOps) {
      if (is_bitwise(op) && !is_integer(type)) continue;  // refused by the library and the bench
      for (int ranks : {1, 2, 3, 5, 8, 16, 64}) {
        ValuePattern pattern(type, op, ranks, true);
        std::vector<uint8_t> result(bytes), input(bytes);
        fill_values(type, result.data(), kCount, pattern, 0, 0);
        for (int rank = 1; rank < ranks; ++rank) {
          fill_values(type, input.data(), kCount, pattern, rank, 0);
          reduce_into(result.data(), input.data(), kCount, type, op);
        }
        if (op == ReduceOp::kAvg) finish_average(result.data(), kCount, type, ranks);
        size_t wrong =
            count_wrong(type, result.data(), kCount, [&](size_t i) { return pattern.reduced(i); });
        EXPECT_EQ(wrong, 0u) << type_name(type) << " " << op_name(op) << " P=" << ranks;
      }
    }
  }
}

TEST(BenchValues, PoisonAndShiftsCountAsWrong) {
  constexpr size_t kCount = 512;
  for (DataType type : kTypes) {
    for (bool reduces : {false, true}) {
      ValuePattern pattern(type, ReduceOp::kSum, 4, reduces);
      std::vector<uint8_t> data(kCount * element_size(type));
      std::memset(data.data(), 0xFF, data.size());
      auto input = [&](size_t i) { return pattern.input(2, i); };
      EXPECT_EQ(count_wrong(type, data.data(), kCount, input), kCount) << type_name(type);
      fill_values(type, data.data(), kCount, pattern, 2, 0);
      EXPECT_EQ(count_wrong(type, data.data(), kCount, input), 0u) << type_name(type);
      // A block from the wrong rank or at the wrong offset differs in most elements.
      fill_values(type, data.data(), kCount, pattern, 1, 0);
      EXPECT_GT(count_wrong(type, data.data(), kCount, input), kCount / 4) << type_name(type);
      fill_values(type, data.data(), kCount, pattern, 2, 1);
      EXPECT_GT(count_wrong(type, data.data(), kCount, input), kCount / 4) << type_name(type);
    }
  }
}

}  // namespace
}  // namespace gloo_lite::bench
