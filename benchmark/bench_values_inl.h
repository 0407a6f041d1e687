// Typed element access for bench_values.h: each DataType's storage read and written as a double.
#pragma once

#include <cstring>

#include "gloo_lite/types.h"

namespace gloo_lite::bench::detail {

template <typename S>
struct PlainCodec {
  using Storage = S;
  static double load(Storage value) { return static_cast<double>(value); }
  static Storage store(double value) { return static_cast<Storage>(value); }
};
struct HalfCodec {
  using Storage = uint16_t;
  static double load(Storage value) { return half_to_float(value); }
  static Storage store(double value) { return float_to_half(static_cast<float>(value)); }
};
struct BFloat16Codec {
  using Storage = uint16_t;
  static double load(Storage value) { return bfloat16_to_float(value); }
  static Storage store(double value) { return float_to_bfloat16(static_cast<float>(value)); }
};

// Calls visit(Codec{}) with the codec of `type`.
template <typename Visit>
decltype(auto) with_codec(DataType type, Visit&& visit) {
  switch (type) {
    case DataType::kInt8:
      return visit(PlainCodec<int8_t>{});
    case DataType::kUint8:
      return visit(PlainCodec<uint8_t>{});
    case DataType::kInt32:
      return visit(PlainCodec<int32_t>{});
    case DataType::kUint32:
      return visit(PlainCodec<uint32_t>{});
    case DataType::kInt64:
      return visit(PlainCodec<int64_t>{});
    case DataType::kUint64:
      return visit(PlainCodec<uint64_t>{});
    case DataType::kFloat16:
      return visit(HalfCodec{});
    case DataType::kBFloat16:
      return visit(BFloat16Codec{});
    case DataType::kFloat32:
      return visit(PlainCodec<float>{});
    case DataType::kFloat64:
      break;
  }
  return visit(PlainCodec<double>{});
}

}  // namespace gloo_lite::bench::detail

namespace gloo_lite::bench {

template <typename Expected>
size_t count_wrong(DataType type, const void* data, size_t count, Expected&& expected) {
  return detail::with_codec(type, [&](auto codec) {
    using Codec = decltype(codec);
    const auto* values = static_cast<const typename Codec::Storage*>(data);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      if (Codec::load(values[i]) != expected(i)) ++wrong;
    }
    return wrong;
  });
}

}  // namespace gloo_lite::bench
