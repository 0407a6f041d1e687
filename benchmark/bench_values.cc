#include "bench_values.h"

#include <algorithm>
#include <cmath>

namespace gloo_lite::bench {
namespace {

// The largest integer n such that every integer in [0, n] is exact in the type.
double exact_integer_limit(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return 127;
    case DataType::kUint8:
      return 254;  // 255 is the poison of unwritten outputs (bench_collective.cc)
    case DataType::kFloat16:
      return 2048;
    case DataType::kBFloat16:
      return 256;
    case DataType::kFloat32:
      return 1 << 24;
    default:
      return 1e15;
  }
}

// SplitMix64's finaliser over (rank, index): cheap, and neighbouring elements and ranks differ.
uint32_t mix(int rank, size_t index) {
  uint64_t x =
      index * 0x9E3779B97F4A7C15ull + (static_cast<uint64_t>(rank) + 1) * 0xD1B54A32D192ED03ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>(x ^ (x >> 31));
}

// Rounds `value` to the type, through its storage.
double round_to(DataType type, double value) {
  return detail::with_codec(type, [&](auto codec) { return codec.load(codec.store(value)); });
}

}  // namespace

ValuePattern::ValuePattern(DataType type, ReduceOp op, int ranks, bool reduces)
    : type_(type), op_(op), ranks_(std::max(ranks, 1)), range_(16), single_two_(false) {
  double limit = exact_integer_limit(type);
  if (!reduces) {
    op_ = ReduceOp::kMax;  // no reduction: only the type's exact range matters
    range_ = static_cast<uint32_t>(std::min(limit, 1000.0)) + 1;  // [0, limit]
  } else if (op == ReduceOp::kSum || op == ReduceOp::kAvg) {
    range_ = static_cast<uint32_t>(std::min(16.0, std::floor(limit / ranks_) + 1));
  } else if (op == ReduceOp::kProd) {
    // Every rank 1 or 2 while 2^P is exact; beyond that, a single 2 per element.
    single_two_ = ranks_ >= 63 || std::ldexp(1.0, ranks_) > limit;
  } else if (is_bitwise(op)) {
    // 7 random bits: every result stays in [0, 127], exact in every integer type (the only
    // types these ops take) and never uint8's poison 255.
    range_ = 128;
  }
}

double ValuePattern::input(int rank, size_t index) const {
  if (op_ == ReduceOp::kProd) {
    if (single_two_) return static_cast<int>(mix(-1, index) % ranks_) == rank ? 2 : 1;
    return 1 + mix(rank, index) % 2;
  }
  return mix(rank, index) % range_;
}

double ValuePattern::reduced(size_t index) const {
  double result = input(0, index);
  for (int rank = 1; rank < ranks_; ++rank) {
    double value = input(rank, index);
    switch (op_) {
      case ReduceOp::kProd:
        result *= value;
        break;
      case ReduceOp::kMin:
        result = std::min(result, value);
        break;
      case ReduceOp::kMax:
        result = std::max(result, value);
        break;
      case ReduceOp::kBand:
        result = static_cast<double>(static_cast<uint32_t>(result) & static_cast<uint32_t>(value));
        break;
      case ReduceOp::kBor:
        result = static_cast<double>(static_cast<uint32_t>(result) | static_cast<uint32_t>(value));
        break;
      case ReduceOp::kBxor:
        result = static_cast<double>(static_cast<uint32_t>(result) ^ static_cast<uint32_t>(value));
        break;
      default:  // sum, avg
        result += value;
    }
  }
  if (op_ != ReduceOp::kAvg) return result;
  // finish_average: integers truncate; 16-bit floats divide in float and round once; float and
  // double divide in their own type.
  switch (type_) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
      return round_to(type_, static_cast<float>(result) / static_cast<float>(ranks_));
    case DataType::kFloat64:
      return result / ranks_;
    default:
      return std::trunc(result / ranks_);
  }
}

void fill_values(DataType type, void* data, size_t count, const ValuePattern& pattern, int rank,
                 size_t first) {
  detail::with_codec(type, [&](auto codec) {
    using Codec = decltype(codec);
    auto* values = static_cast<typename Codec::Storage*>(data);
    for (size_t i = 0; i < count; ++i) values[i] = Codec::store(pattern.input(rank, first + i));
  });
}

}  // namespace gloo_lite::bench
