// Public reduction entry points, kernel-family dispatch, and the portable kernels: plain loops
// over __restrict pointers that GCC and Clang vectorise for the baseline ISA at -O3 (Release).
#include "gloo_lite/reduction.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/float16_bits.h"
#include "gloo_lite/reduction_kernels.h"

namespace gloo_lite {
namespace detail {
namespace {

// The storage type of each DataType (16-bit floats as their bits).
template <DataType T>
struct Storage;
template <>
struct Storage<DataType::kInt8> {
  using type = int8_t;
};
template <>
struct Storage<DataType::kUint8> {
  using type = uint8_t;
};
template <>
struct Storage<DataType::kInt32> {
  using type = int32_t;
};
template <>
struct Storage<DataType::kUint32> {
  using type = uint32_t;
};
template <>
struct Storage<DataType::kInt64> {
  using type = int64_t;
};
template <>
struct Storage<DataType::kUint64> {
  using type = uint64_t;
};
template <>
struct Storage<DataType::kFloat16> {
  using type = uint16_t;
};
template <>
struct Storage<DataType::kBFloat16> {
  using type = uint16_t;
};
template <>
struct Storage<DataType::kFloat32> {
  using type = float;
};
template <>
struct Storage<DataType::kFloat64> {
  using type = double;
};
template <DataType T>
using StorageOf = typename Storage<T>::type;

// Integer sum/prod on the unsigned type (wrapping, no signed-overflow UB); sub-int types are
// multiplied as unsigned int so that integer promotion cannot make them signed. The bitwise ops
// act on the two's-complement bits whatever the signedness.
template <typename I, ReduceOp Op>
inline I combine_integer(I a, I b) {
  using U = std::make_unsigned_t<I>;
  using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  if constexpr (Op == ReduceOp::kSum) {
    return static_cast<I>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) + static_cast<U>(b)));
  } else if constexpr (Op == ReduceOp::kProd) {
    return static_cast<I>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) *
                                         static_cast<Wide>(static_cast<U>(b))));
  } else if constexpr (Op == ReduceOp::kBand) {
    return static_cast<I>(a & b);
  } else if constexpr (Op == ReduceOp::kBor) {
    return static_cast<I>(a | b);
  } else if constexpr (Op == ReduceOp::kBxor) {
    return static_cast<I>(a ^ b);
  } else if constexpr (Op == ReduceOp::kMin) {
    return b < a ? b : a;
  } else {
    return b > a ? b : a;
  }
}

// The float's bit pattern as the unsigned integer of its size, and back.
template <typename F>
using BitsOf = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
template <typename F>
inline BitsOf<F> bits_of(F value) {
  BitsOf<F> bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
template <typename F>
inline F float_of(BitsOf<F> bits) {
  F value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// min/max by the symmetric rule of reduction_kernels.h: an operand strictly below (above) the
// other wins; otherwise the two patterns are combined bitwise, so the result does not depend on
// the operand order (the order in which an algorithm meets the ranks' values).
template <typename F, ReduceOp Op>
inline F combine_float(F a, F b) {
  if constexpr (Op == ReduceOp::kSum) {
    return a + b;
  } else if constexpr (Op == ReduceOp::kProd) {
    return a * b;
  } else if constexpr (Op == ReduceOp::kMin) {
    if (a < b) return a;
    if (b < a) return b;
    return float_of<F>(bits_of(a) | bits_of(b));  // -0 wins a tie; a NaN stays a NaN
  } else {
    if (a > b) return a;
    if (b > a) return b;
    const bool unordered = a != a || b != b;
    return float_of<F>(unordered ? bits_of(a) | bits_of(b) : bits_of(a) & bits_of(b));
  }
}

// min/max of a 16-bit float format with all-ones-exponent pattern `Inf` and quiet bit `Quiet`,
// without converting, by the same rule: sign-magnitude patterns order like their values once
// the magnitude of a negative one is inverted (-0 maps to -1, below +0's 0), so keys tie only
// for identical patterns; a NaN operand gives the OR of both patterns, made quiet.
template <uint16_t Inf, uint16_t Quiet, ReduceOp Op>
inline uint16_t min_max_16(uint16_t a, uint16_t b) {
  const int32_t magnitude_a = a & 0x7fff, magnitude_b = b & 0x7fff;
  if (magnitude_a > Inf || magnitude_b > Inf) return static_cast<uint16_t>(a | b | Quiet);
  const int32_t key_a = (a & 0x8000) != 0 ? ~magnitude_a : magnitude_a;
  const int32_t key_b = (b & 0x8000) != 0 ? ~magnitude_b : magnitude_b;
  const bool pick_a = Op == ReduceOp::kMin ? key_a < key_b : key_a > key_b;
  return pick_a ? a : b;
}

template <DataType T, ReduceOp Op>
inline StorageOf<T> combine(StorageOf<T> a, StorageOf<T> b) {
  constexpr bool kMinMax = Op == ReduceOp::kMin || Op == ReduceOp::kMax;
  if constexpr (T == DataType::kFloat16 && kMinMax) {
    return min_max_16<0x7c00, 0x0200, Op>(a, b);
  } else if constexpr (T == DataType::kBFloat16 && kMinMax) {
    return min_max_16<0x7f80, 0x0040, Op>(a, b);
  } else if constexpr (T == DataType::kFloat16) {
    return float_to_half_bits(
        combine_float<float, Op>(half_bits_to_float(a), half_bits_to_float(b)));
  } else if constexpr (T == DataType::kBFloat16) {
    return float_to_bfloat16_bits(
        combine_float<float, Op>(bfloat16_bits_to_float(a), bfloat16_bits_to_float(b)));
  } else if constexpr (std::is_floating_point_v<StorageOf<T>>) {
    return combine_float<StorageOf<T>, Op>(a, b);
  } else {
    return combine_integer<StorageOf<T>, Op>(a, b);
  }
}

// Three loops so that each one has non-aliasing pointers the compiler can vectorise; operand
// order is kept (op(a, b)) so that the result does not depend on which buffer dst is.
template <DataType T, ReduceOp Op>
void separate_loop(StorageOf<T>* __restrict dst, const StorageOf<T>* __restrict a,
                   const StorageOf<T>* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = combine<T, Op>(a[i], b[i]);
}

template <DataType T, ReduceOp Op>
void into_first_loop(StorageOf<T>* __restrict dst, const StorageOf<T>* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = combine<T, Op>(dst[i], b[i]);
}

template <DataType T, ReduceOp Op>
void into_second_loop(StorageOf<T>* __restrict dst, const StorageOf<T>* __restrict a,
                      size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = combine<T, Op>(a[i], dst[i]);
}

template <DataType T, ReduceOp Op>
void portable(void* dst, const void* a, const void* b, size_t count) {
  using S = StorageOf<T>;
  auto* out = static_cast<S*>(dst);
  if (dst == a) {
    into_first_loop<T, Op>(out, static_cast<const S*>(b), count);
  } else if (dst == b) {
    into_second_loop<T, Op>(out, static_cast<const S*>(a), count);
  } else {
    separate_loop<T, Op>(out, static_cast<const S*>(a), static_cast<const S*>(b), count);
  }
}

// The bitwise ops have kernels for the integer types only (reduction_kernels.h).
template <DataType T>
ReduceKernel portable_bitwise(ReduceOp op) {
  if constexpr (is_integer(T)) {
    if (op == ReduceOp::kBand) return &portable<T, ReduceOp::kBand>;
    if (op == ReduceOp::kBor) return &portable<T, ReduceOp::kBor>;
    if (op == ReduceOp::kBxor) return &portable<T, ReduceOp::kBxor>;
  }
  return nullptr;
}

template <DataType T>
ReduceKernel portable_for(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return &portable<T, ReduceOp::kSum>;
    case ReduceOp::kProd:
      return &portable<T, ReduceOp::kProd>;
    case ReduceOp::kMin:
      return &portable<T, ReduceOp::kMin>;
    case ReduceOp::kMax:
      return &portable<T, ReduceOp::kMax>;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return portable_bitwise<T>(op);
    case ReduceOp::kCustom:
      break;
  }
  return nullptr;
}

template <DataType T>
void divide(void* data, size_t count, int ranks) {
  auto* values = static_cast<StorageOf<T>*>(data);
  if constexpr (T == DataType::kFloat16) {
    const float divisor = static_cast<float>(ranks);
    for (size_t i = 0; i < count; ++i) {
      values[i] = float_to_half_bits(half_bits_to_float(values[i]) / divisor);
    }
  } else if constexpr (T == DataType::kBFloat16) {
    const float divisor = static_cast<float>(ranks);
    for (size_t i = 0; i < count; ++i) {
      values[i] = float_to_bfloat16_bits(bfloat16_bits_to_float(values[i]) / divisor);
    }
  } else if constexpr (std::is_floating_point_v<StorageOf<T>>) {
    // Division, not multiplication by 1/P, so that the result is correctly rounded.
    const auto divisor = static_cast<StorageOf<T>>(ranks);
    for (size_t i = 0; i < count; ++i) values[i] /= divisor;
  } else {
    // Divide in a type at least as wide as int so the quotient truncates toward zero as C++ does;
    // a 64-bit or unsigned 32-bit value keeps its own type (ranks > 0, so no sign surprise).
    using S = StorageOf<T>;
    using Wide = std::conditional_t<(sizeof(S) < sizeof(int)), int, S>;
    const auto divisor = static_cast<Wide>(ranks);
    for (size_t i = 0; i < count; ++i) {
      values[i] = static_cast<S>(static_cast<Wide>(values[i]) / divisor);
    }
  }
}

KernelFamily choose_family() {
  const std::string simd = knob_string("GLOO_LITE_SIMD");
  if (simd == "portable") return KernelFamily::kPortable;
  if (simd != "auto") {
    throw InvalidArgument("GLOO_LITE_SIMD='" + simd + "': expected auto or portable");
  }
  return cpu_has_avx2_kernels() ? KernelFamily::kAvx2 : KernelFamily::kPortable;
}

ReduceKernel active_kernel(DataType type, ReduceOp op) {
  ReduceKernel kernel = kernel_of(active_kernel_family(), type, op);
  if (kernel == nullptr && is_bitwise(op) && !is_integer(type)) {
    throw InvalidArgument(std::string("reduction ") + op_name(op) + " on " + type_name(type) +
                          ": bitwise ops need an integer type (int8, uint8, int32, uint32, "
                          "int64, uint64)");
  }
  if (kernel == nullptr) {
    throw InvalidArgument(std::string("no reduction kernel for type ") + type_name(type) + ", op " +
                          std::to_string(static_cast<int>(op)));
  }
  return kernel;
}

const ReduceFunction& checked_custom(const ReduceFunction& custom) {
  if (!custom) throw InvalidArgument("ReduceOp::kCustom needs a reduction function");
  return custom;
}

}  // namespace

ReduceKernel portable_kernel(DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kInt8:
      return portable_for<DataType::kInt8>(op);
    case DataType::kUint8:
      return portable_for<DataType::kUint8>(op);
    case DataType::kInt32:
      return portable_for<DataType::kInt32>(op);
    case DataType::kUint32:
      return portable_for<DataType::kUint32>(op);
    case DataType::kInt64:
      return portable_for<DataType::kInt64>(op);
    case DataType::kUint64:
      return portable_for<DataType::kUint64>(op);
    case DataType::kFloat16:
      return portable_for<DataType::kFloat16>(op);
    case DataType::kBFloat16:
      return portable_for<DataType::kBFloat16>(op);
    case DataType::kFloat32:
      return portable_for<DataType::kFloat32>(op);
    case DataType::kFloat64:
      return portable_for<DataType::kFloat64>(op);
  }
  return nullptr;
}

bool cpu_has_avx2_kernels() {
  // libgcc's CPU model also checks (XGETBV) that the OS saves the YMM state.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
}

KernelFamily active_kernel_family() {
  static const KernelFamily family = choose_family();
  return family;
}

ReduceKernel kernel_of(KernelFamily family, DataType type, ReduceOp op) {
  return family == KernelFamily::kAvx2 ? avx2_kernel(type, op) : portable_kernel(type, op);
}

}  // namespace detail

void reduce_into(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                 const ReduceFunction& custom) {
  reduce_to(dst, dst, src, count, type, op, custom);
}

void reduce_to(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op,
               const ReduceFunction& custom) {
  if (op == ReduceOp::kCustom) {
    const ReduceFunction& function = detail::checked_custom(custom);
    if (count == 0) return;
    // A custom function combines in place; ReduceFunction promises commutativity, so dst == b
    // needs no copy.
    if (dst == a) {
      function(dst, b, count);
    } else if (dst == b) {
      function(dst, a, count);
    } else {
      std::memcpy(dst, a, count * element_size(type));
      function(dst, b, count);
    }
    return;
  }
  const detail::ReduceKernel kernel = detail::active_kernel(type, op);
  if (count != 0) kernel(dst, a, b, count);
}

void finish_average(void* data, size_t count, DataType type, int ranks) {
  if (ranks <= 0) {
    throw InvalidArgument("finish_average: ranks must be positive, got " + std::to_string(ranks));
  }
  switch (type) {
    case DataType::kInt8:
      return detail::divide<DataType::kInt8>(data, count, ranks);
    case DataType::kUint8:
      return detail::divide<DataType::kUint8>(data, count, ranks);
    case DataType::kInt32:
      return detail::divide<DataType::kInt32>(data, count, ranks);
    case DataType::kUint32:
      return detail::divide<DataType::kUint32>(data, count, ranks);
    case DataType::kInt64:
      return detail::divide<DataType::kInt64>(data, count, ranks);
    case DataType::kUint64:
      return detail::divide<DataType::kUint64>(data, count, ranks);
    case DataType::kFloat16:
      return detail::divide<DataType::kFloat16>(data, count, ranks);
    case DataType::kBFloat16:
      return detail::divide<DataType::kBFloat16>(data, count, ranks);
    case DataType::kFloat32:
      return detail::divide<DataType::kFloat32>(data, count, ranks);
    case DataType::kFloat64:
      return detail::divide<DataType::kFloat64>(data, count, ranks);
  }
  throw InvalidArgument("finish_average: invalid DataType value " +
                        std::to_string(static_cast<int>(type)));
}

const char* reduction_isa() {
  return detail::active_kernel_family() == detail::KernelFamily::kAvx2 ? "avx2+f16c" : "portable";
}

}  // namespace gloo_lite
