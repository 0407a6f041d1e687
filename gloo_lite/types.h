// Element types and reduction operations of the collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace gloo_lite {

enum class DataType : uint8_t {
  kInt8,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

// The values are the C ABI's (gloo_lite.h: GLOO_LITE_SUM = 0 ...); new operations go at the end.
// kBand, kBor and kBxor are elementwise &, |, ^ (MPI_BAND, MPI_BOR, MPI_BXOR) and are defined on
// the integer types only: a collective given one with a floating-point type throws
// InvalidArgument before anything moves.
enum class ReduceOp : uint8_t { kSum, kProd, kMin, kMax, kAvg, kCustom, kBand, kBor, kBxor };

// int8 .. uint64: the types that kBand, kBor and kBxor accept.
constexpr bool is_integer(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kInt64:
    case DataType::kUint64:
      return true;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      break;
  }
  return false;
}

constexpr bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
}

// A user reduction: combine `count` elements of `in` into `inout` (inout[i] = f(inout[i], in[i])).
// It must be associative and commutative like MPI's built-in operations; algorithms combine
// partial results in an order that depends on the algorithm and P.
using ReduceFunction = std::function<void(void* inout, const void* in, size_t count)>;

size_t element_size(DataType type);
const char* type_name(DataType type);  // "float32", "bfloat16", ...
const char* op_name(ReduceOp op);      // "sum", ..., "band", "bor", "bxor"
// Parse names as printed above (and nccl-tests' short forms: float, half, bf16, int, ...);
// throw InvalidArgument listing the accepted names.
DataType parse_type(const std::string& name);
ReduceOp parse_op(const std::string& name);

// float16 / bfloat16 <-> float with round-to-nearest-even (NaN stays NaN, overflow to inf).
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

// Host-side typed wrappers for the 16-bit formats, so that std::vector<float16> works with the
// typed collective overloads.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float value) : bits(float_to_half(value)) {}
  explicit operator float() const { return half_to_float(bits); }
};
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float value) : bits(float_to_bfloat16(value)) {}
  explicit operator float() const { return bfloat16_to_float(bits); }
};

// The DataType of a C++ element type, for typed overloads.
template <typename T>
struct DataTypeOf;
#define GLOO_LITE_DATA_TYPE_OF(T, V)               \
  template <>                                      \
  struct DataTypeOf<T> {                           \
    static constexpr DataType value = DataType::V; \
  };
GLOO_LITE_DATA_TYPE_OF(int8_t, kInt8)
GLOO_LITE_DATA_TYPE_OF(uint8_t, kUint8)
GLOO_LITE_DATA_TYPE_OF(int32_t, kInt32)
GLOO_LITE_DATA_TYPE_OF(uint32_t, kUint32)
GLOO_LITE_DATA_TYPE_OF(int64_t, kInt64)
GLOO_LITE_DATA_TYPE_OF(uint64_t, kUint64)
GLOO_LITE_DATA_TYPE_OF(float16, kFloat16)
GLOO_LITE_DATA_TYPE_OF(bfloat16, kBFloat16)
GLOO_LITE_DATA_TYPE_OF(float, kFloat32)
GLOO_LITE_DATA_TYPE_OF(double, kFloat64)
#undef GLOO_LITE_DATA_TYPE_OF

}  // namespace gloo_lite
