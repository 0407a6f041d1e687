// Every DataType x ReduceOp through both kernel families and the public entry points, against a
// reference computed with exact integer math or in double (reference.h), on lengths that hit
// every vector tail, with buffers offset by one or two elements and guard elements around dst.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/reduction.h"
#include "gloo_lite/reduction_kernels.h"
#include "reference.h"

namespace gloo_lite::test {
namespace {

enum class Path { kPortable, kAvx2, kPublic };

constexpr DataType kAllTypes[] = {
    DataType::kInt8,    DataType::kUint8,   DataType::kInt32,   DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,  DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat32, DataType::kFloat64,
};
constexpr ReduceOp kBuiltinOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                    ReduceOp::kAvg};
// The bitwise ops exist for the integer types only.
constexpr DataType kIntegerTypes[] = {DataType::kInt8,   DataType::kUint8, DataType::kInt32,
                                      DataType::kUint32, DataType::kInt64, DataType::kUint64};
constexpr ReduceOp kBitwiseOps[] = {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
constexpr size_t kLengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 1000, 65537};

bool is_float(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16 || type == DataType::kFloat32 ||
         type == DataType::kFloat64;
}
bool is_signed_integer(DataType type) {
  return type == DataType::kInt8 || type == DataType::kInt32 || type == DataType::kInt64;
}
uint64_t mask_of(DataType type) {
  const size_t bits = element_size(type) * 8;
  return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// ---- reference ----

double decode(DataType type, uint64_t bits) {
  switch (type) {
    case DataType::kFloat16:
      return reference_decode(static_cast<uint16_t>(bits), kHalfFormat);
    case DataType::kBFloat16:
      return reference_decode(static_cast<uint16_t>(bits), kBFloat16Format);
    case DataType::kFloat32:
      return float_of(static_cast<uint32_t>(bits));
    default: {
      double value;
      std::memcpy(&value, &bits, sizeof value);
      return value;
    }
  }
}

uint64_t encode(DataType type, double value) {
  switch (type) {
    case DataType::kFloat16:
      return reference_encode(value, kHalfFormat);
    case DataType::kBFloat16:
      return reference_encode(value, kBFloat16Format);
    case DataType::kFloat32:
      return bits_of(static_cast<float>(value));
    default:
      return bits_of(value);
  }
}

__int128 integer_value(DataType type, uint64_t bits) {
  if (!is_signed_integer(type)) return static_cast<__int128>(bits);
  const size_t shift = 64 - element_size(type) * 8;  // sign-extend
  return static_cast<int64_t>(bits << shift) >> shift;
}

uint64_t reference(DataType type, ReduceOp op, uint64_t a, uint64_t b) {
  if (op == ReduceOp::kAvg) op = ReduceOp::kSum;
  if (is_float(type)) {
    const double x = decode(type, a), y = decode(type, b);
    double result;
    if (op == ReduceOp::kSum) {
      result = x + y;
    } else if (op == ReduceOp::kProd) {
      result = x * y;
    } else if (std::isnan(x) || std::isnan(y)) {
      result = std::numeric_limits<double>::quiet_NaN();
    } else if (x == y) {
      // Equal values differ at most in the zero's sign: -0 is the min, +0 the max.
      result = (op == ReduceOp::kMin) == (std::signbit(x) != 0) ? x : y;
    } else {
      result = op == ReduceOp::kMin ? std::min(x, y) : std::max(x, y);
    }
    return encode(type, result);
  }
  if (op == ReduceOp::kBand) return a & b;
  if (op == ReduceOp::kBor) return a | b;
  if (op == ReduceOp::kBxor) return a ^ b;
  const __int128 x = integer_value(type, a), y = integer_value(type, b);
  unsigned __int128 result;
  if (op == ReduceOp::kSum) {
    result = static_cast<unsigned __int128>(x + y);
  } else if (op == ReduceOp::kProd) {
    result = static_cast<unsigned __int128>(x) * static_cast<unsigned __int128>(y);
  } else {
    result = static_cast<unsigned __int128>(op == ReduceOp::kMin ? std::min(x, y) : std::max(x, y));
  }
  return static_cast<uint64_t>(result) & mask_of(type);
}

// NaN matches any NaN (the payload is not specified); everything else bit for bit, the sign of
// a zero min/max included.
bool matches(DataType type, uint64_t expected, uint64_t got) {
  if (is_float(type) && std::isnan(decode(type, expected))) return std::isnan(decode(type, got));
  return expected == got;
}

// ---- data ----

uint64_t random_element(DataType type, std::mt19937_64& rng) {
  const uint64_t raw = rng();
  if (type != DataType::kFloat32 && type != DataType::kFloat64) return raw & mask_of(type);
  // Mostly ordinary values over a wide range, some raw bit patterns, some special values.
  const int kind = static_cast<int>(raw % 20);
  double value;
  if (kind < 2) return (rng()) & mask_of(type);
  if (kind < 4) {
    constexpr double kSpecials[] = {0.0,  -0.0,   1.0,    -1.0,   INFINITY, -INFINITY, NAN,
                                    -NAN, 1e-310, -4e-45, 3.4e38, -3.4e38,  1.7e308};
    value = kSpecials[rng() % (sizeof kSpecials / sizeof kSpecials[0])];
  } else {
    std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
    std::uniform_int_distribution<int> exponent(-30, 30);
    value = std::ldexp(mantissa(rng), exponent(rng));
  }
  return type == DataType::kFloat32 ? bits_of(static_cast<float>(value)) : bits_of(value);
}

// Elements at [lead, lead + count), guard elements around them filled with a sentinel.
class Buffer {
 public:
  Buffer(DataType type, size_t count, size_t lead)
      : size_(element_size(type)),
        count_(count),
        lead_(lead),
        words_(((lead + count + 1) * size_ + 7) / 8) {
    std::memset(words_.data(), kSentinel, words_.size() * 8);
  }
  void* data() { return bytes() + lead_ * size_; }
  uint64_t get(size_t i) const {
    uint64_t value = 0;
    std::memcpy(&value, bytes() + (lead_ + i) * size_, size_);
    return value;
  }
  void set(size_t i, uint64_t value) { std::memcpy(bytes() + (lead_ + i) * size_, &value, size_); }
  bool guards_intact() const {
    for (size_t i = 0; i < lead_ * size_; ++i) {
      if (bytes()[i] != kSentinel) return false;
    }
    for (size_t i = (lead_ + count_) * size_; i < (lead_ + count_ + 1) * size_; ++i) {
      if (bytes()[i] != kSentinel) return false;
    }
    return true;
  }

 private:
  static constexpr unsigned char kSentinel = 0xa5;
  unsigned char* bytes() { return reinterpret_cast<unsigned char*>(words_.data()); }
  const unsigned char* bytes() const {
    return reinterpret_cast<const unsigned char*>(words_.data());
  }
  size_t size_, count_, lead_;
  std::vector<uint64_t> words_;
};

// ---- running a path ----

bool path_available(Path path) { return path != Path::kAvx2 || detail::cpu_has_avx2_kernels(); }

// dst = op(a, b) through `path`; into = the reduce_into form (dst must be a).
void run(Path path, void* dst, const void* a, const void* b, size_t count, DataType type,
         ReduceOp op, bool into) {
  if (path == Path::kPublic) {
    if (into) {
      reduce_into(dst, b, count, type, op);
    } else {
      reduce_to(dst, a, b, count, type, op);
    }
    return;
  }
  const auto family =
      path == Path::kAvx2 ? detail::KernelFamily::kAvx2 : detail::KernelFamily::kPortable;
  detail::ReduceKernel kernel = detail::kernel_of(family, type, op);
  ASSERT_NE(kernel, nullptr);
  kernel(dst, a, b, count);
}

enum class Mode { kInto, kSeparate, kDstIsA, kDstIsB };
const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kInto:
      return "reduce_into";
    case Mode::kSeparate:
      return "reduce_to(separate)";
    case Mode::kDstIsA:
      return "reduce_to(dst=a)";
    case Mode::kDstIsB:
      return "reduce_to(dst=b)";
  }
  return "?";
}

// Runs one mode and returns dst (checking the guards).
Buffer run_mode(Path path, Mode mode, DataType type, ReduceOp op, Buffer& a, Buffer& b,
                size_t count) {
  Buffer dst(type, count, 1);
  if (mode == Mode::kDstIsB) {
    for (size_t i = 0; i < count; ++i) dst.set(i, b.get(i));
    run(path, dst.data(), a.data(), dst.data(), count, type, op, false);
  } else if (mode == Mode::kSeparate) {
    run(path, dst.data(), a.data(), b.data(), count, type, op, false);
  } else {
    for (size_t i = 0; i < count; ++i) dst.set(i, a.get(i));
    run(path, dst.data(), dst.data(), b.data(), count, type, op, mode == Mode::kInto);
  }
  EXPECT_TRUE(dst.guards_intact()) << mode_name(mode) << " wrote outside dst, count " << count;
  return dst;
}

using Params = std::tuple<DataType, ReduceOp, Path>;

class ReduceAllTypes : public ::testing::TestWithParam<Params> {};

TEST_P(ReduceAllTypes, MatchesReference) {
  const auto [type, op, path] = GetParam();
  if (!path_available(path)) GTEST_SKIP() << "CPU lacks AVX2/F16C/FMA";
  std::mt19937_64 rng(static_cast<uint64_t>(type) * 131 + static_cast<uint64_t>(op));
  for (const size_t count : kLengths) {
    Buffer a(type, count, 1), b(type, count, 2);  // different misalignments
    std::vector<uint64_t> expected(count);
    for (size_t i = 0; i < count; ++i) {
      a.set(i, random_element(type, rng));
      // Some equal pairs, for min/max of equal values and x + x.
      b.set(i, rng() % 16 == 0 ? a.get(i) : random_element(type, rng));
      expected[i] = reference(type, op, a.get(i), b.get(i));
    }
    for (const Mode mode : {Mode::kInto, Mode::kSeparate, Mode::kDstIsA, Mode::kDstIsB}) {
      const Buffer dst = run_mode(path, mode, type, op, a, b, count);
      for (size_t i = 0; i < count; ++i) {
        if (!matches(type, expected[i], dst.get(i))) {
          ADD_FAILURE() << mode_name(mode) << " count " << count << " element " << i << std::hex
                        << ": a 0x" << a.get(i) << " b 0x" << b.get(i) << " expected 0x"
                        << expected[i] << " got 0x" << dst.get(i);
          break;
        }
      }
    }
  }
}

std::string path_name(Path path) {
  switch (path) {
    case Path::kPortable:
      return "portable";
    case Path::kAvx2:
      return "avx2";
    case Path::kPublic:
      return "public";
  }
  return "?";
}

std::string params_name(const ::testing::TestParamInfo<Params>& info) {
  return std::string(type_name(std::get<0>(info.param))) + "_" + op_name(std::get<1>(info.param)) +
         "_" + path_name(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, ReduceAllTypes,
    ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::ValuesIn(kBuiltinOps),
                       ::testing::Values(Path::kPortable, Path::kAvx2, Path::kPublic)),
    params_name);
INSTANTIATE_TEST_SUITE_P(
    Bitwise, ReduceAllTypes,
    ::testing::Combine(::testing::ValuesIn(kIntegerTypes), ::testing::ValuesIn(kBitwiseOps),
                       ::testing::Values(Path::kPortable, Path::kAvx2, Path::kPublic)),
    params_name);

// Both families give identical bits (NaN payloads aside), so results do not depend on the CPU
// a rank runs on.
class FamiliesAgree : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(FamiliesAgree, BitForBit) {
  const auto [type, op] = GetParam();
  if (!path_available(Path::kAvx2)) GTEST_SKIP() << "CPU lacks AVX2/F16C/FMA";
  std::mt19937_64 rng(7);
  const size_t count = 4099;
  Buffer a(type, count, 1), b(type, count, 1);
  for (size_t i = 0; i < count; ++i) {
    a.set(i, random_element(type, rng));
    b.set(i, rng() % 8 == 0 ? a.get(i) : random_element(type, rng));
  }
  // Signed zeros in both orders for min/max.
  a.set(0, encode(type, 0.0));
  b.set(0, encode(type, -0.0));
  a.set(1, encode(type, -0.0));
  b.set(1, encode(type, 0.0));
  const Buffer portable = run_mode(Path::kPortable, Mode::kSeparate, type, op, a, b, count);
  const Buffer avx2 = run_mode(Path::kAvx2, Mode::kSeparate, type, op, a, b, count);
  for (size_t i = 0; i < count; ++i) {
    const bool both_nan = is_float(type) && std::isnan(decode(type, portable.get(i))) &&
                          std::isnan(decode(type, avx2.get(i)));
    ASSERT_TRUE(both_nan || portable.get(i) == avx2.get(i))
        << "element " << i << std::hex << " portable 0x" << portable.get(i) << " avx2 0x"
        << avx2.get(i);
  }
}

std::string type_op_name(const ::testing::TestParamInfo<std::tuple<DataType, ReduceOp>>& info) {
  return std::string(type_name(std::get<0>(info.param))) + "_" + op_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Kernels, FamiliesAgree,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes),
                                            ::testing::ValuesIn(kBuiltinOps)),
                         type_op_name);
INSTANTIATE_TEST_SUITE_P(Bitwise, FamiliesAgree,
                         ::testing::Combine(::testing::ValuesIn(kIntegerTypes),
                                            ::testing::ValuesIn(kBitwiseOps)),
                         type_op_name);

// min/max are symmetric: op(a, b) and op(b, a) give the same bits for every pair of special
// values, signed zeros and NaNs of both signs and several payloads (quiet and signalling)
// included, so that ranks which combine the same values in different orders end with the same
// bits (recursive doubling: rank 0 computes op(x0, x1), rank 1 op(x1, x0)).
class MinMaxSymmetric : public ::testing::TestWithParam<Params> {};

std::vector<uint64_t> nan_patterns(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return {0x7e00, 0xfe00, 0x7c01, 0x7d55};
    case DataType::kBFloat16:
      return {0x7fc0, 0xffc0, 0x7f81, 0x7fa5};
    case DataType::kFloat32:
      return {0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa5a5a5};
    default:
      return {0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0x7ffa5a5a5a5a5a5a};
  }
}

TEST_P(MinMaxSymmetric, OperandOrderDoesNotChangeTheBits) {
  const auto [type, op, path] = GetParam();
  if (!path_available(path)) GTEST_SKIP() << "CPU lacks AVX2/F16C/FMA";
  std::vector<uint64_t> values = nan_patterns(type);
  for (const double v :
       {0.0, -0.0, 1.0, -1.0, 2.0, 1e-40, -1e-40, double{INFINITY}, -double{INFINITY}}) {
    values.push_back(encode(type, v));
  }
  const size_t count = values.size() * values.size();
  Buffer a(type, count, 1), b(type, count, 1);
  for (size_t i = 0; i < count; ++i) {
    a.set(i, values[i / values.size()]);
    b.set(i, values[i % values.size()]);
  }
  const Buffer ab = run_mode(path, Mode::kSeparate, type, op, a, b, count);
  const Buffer ba = run_mode(path, Mode::kSeparate, type, op, b, a, count);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(ab.get(i), ba.get(i)) << std::hex << "a 0x" << a.get(i) << " b 0x" << b.get(i);
    EXPECT_TRUE(matches(type, reference(type, op, a.get(i), b.get(i)), ab.get(i)))
        << std::hex << "a 0x" << a.get(i) << " b 0x" << b.get(i) << " got 0x" << ab.get(i);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, MinMaxSymmetric,
    ::testing::Combine(::testing::Values(DataType::kFloat16, DataType::kBFloat16,
                                         DataType::kFloat32, DataType::kFloat64),
                       ::testing::Values(ReduceOp::kMin, ReduceOp::kMax),
                       ::testing::Values(Path::kPortable, Path::kAvx2, Path::kPublic)),
    params_name);

// A float type has no bitwise kernel in either family (dispatch must not fall through to some
// other op's kernel), and the public entry points refuse the call naming op and type.
TEST(Bitwise, FloatTypesHaveNoKernel) {
  constexpr DataType kFloatTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                      DataType::kFloat64};
  for (const DataType type : kFloatTypes) {
    for (const ReduceOp op : kBitwiseOps) {
      EXPECT_EQ(detail::kernel_of(detail::KernelFamily::kPortable, type, op), nullptr)
          << type_name(type) << " " << op_name(op);
      if (path_available(Path::kAvx2)) {
        EXPECT_EQ(detail::kernel_of(detail::KernelFamily::kAvx2, type, op), nullptr)
            << type_name(type) << " " << op_name(op);
      }
      uint64_t x = 0;
      try {
        reduce_into(&x, &x, 1, type, op);
        ADD_FAILURE() << "reduce_into accepted " << op_name(op) << " on " << type_name(type);
      } catch (const InvalidArgument& error) {
        const std::string what = error.what();
        EXPECT_NE(what.find(op_name(op)), std::string::npos) << what;
        EXPECT_NE(what.find(type_name(type)), std::string::npos) << what;
        EXPECT_NE(what.find("integer type"), std::string::npos) << what;
      }
    }
  }
}

}  // namespace
}  // namespace gloo_lite::test
