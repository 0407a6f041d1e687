// AVX2 reduction kernels; F16C converts float16, integer shifts round bfloat16. This file alone is
// compiled with -mavx2 -mf16c -mfma, and reduction.cc calls into it only after checking the CPU.
// To keep AVX2 code from leaking into baseline callers through the linker's choice of inline or
// template copies, everything here is in an anonymous namespace and no standard-library
// template is instantiated; only the entry points at the bottom are exported.
//
// Semantics are those of reduction_kernels.h, bit for bit with the portable kernels. Every type
// goes 32 bytes at a time through step() below, the tail included (through a zero-padded stack
// buffer), so every element takes the same vector arithmetic.
#include <immintrin.h>

#include <cstring>

#include "gloo_lite/reduction_kernels.h"

namespace gloo_lite::detail {
namespace {

// ---- float arithmetic, shared by float32 and the widened 16-bit formats ----

// min/max by the symmetric rule of reduction_kernels.h: minps/maxps where one operand is strictly
// below (above) the other; where neither is (equal, +0 and -0, or a NaN) the OR of both patterns,
// except the AND for max of two ordered operands (+0 wins).
template <ReduceOp Op>
inline __m256 combine_ps(__m256 a, __m256 b) {
  if constexpr (Op == ReduceOp::kSum) {
    return _mm256_add_ps(a, b);
  } else if constexpr (Op == ReduceOp::kProd) {
    return _mm256_mul_ps(a, b);
  } else if constexpr (Op == ReduceOp::kMin) {
    return _mm256_blendv_ps(_mm256_min_ps(a, b), _mm256_or_ps(a, b),
                            _mm256_cmp_ps(a, b, _CMP_EQ_UQ));
  } else {
    const __m256 tie = _mm256_blendv_ps(_mm256_and_ps(a, b), _mm256_or_ps(a, b),
                                        _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    return _mm256_blendv_ps(_mm256_max_ps(a, b), tie, _mm256_cmp_ps(a, b, _CMP_EQ_UQ));
  }
}

template <ReduceOp Op>
inline __m256d combine_pd(__m256d a, __m256d b) {
  if constexpr (Op == ReduceOp::kSum) {
    return _mm256_add_pd(a, b);
  } else if constexpr (Op == ReduceOp::kProd) {
    return _mm256_mul_pd(a, b);
  } else if constexpr (Op == ReduceOp::kMin) {
    return _mm256_blendv_pd(_mm256_min_pd(a, b), _mm256_or_pd(a, b),
                            _mm256_cmp_pd(a, b, _CMP_EQ_UQ));
  } else {
    const __m256d tie = _mm256_blendv_pd(_mm256_and_pd(a, b), _mm256_or_pd(a, b),
                                         _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
    return _mm256_blendv_pd(_mm256_max_pd(a, b), tie, _mm256_cmp_pd(a, b, _CMP_EQ_UQ));
  }
}

// ---- integer arithmetic ----

// Low 8 bits of each byte product: vpmullw on the even bytes (low byte of each 16-bit lane) and
// on the odd bytes shifted down, recombined.
inline __m256i mul_epi8(__m256i a, __m256i b) {
  const __m256i even = _mm256_mullo_epi16(a, b);
  const __m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
  return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00ff)),
                         _mm256_slli_epi16(odd, 8));
}

// Low 64 bits of each 64x64 product: lo*lo + ((lo*hi + hi*lo) << 32); AVX2 has no vpmullq.
inline __m256i mul_epi64(__m256i a, __m256i b) {
  const __m256i low = _mm256_mul_epu32(a, b);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                         _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
}

// Signed 64-bit a > b per lane; unsigned after flipping the sign bits.
template <bool Unsigned>
inline __m256i greater_epi64(__m256i a, __m256i b) {
  if constexpr (Unsigned) {
    const __m256i flip = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
  } else {
    return _mm256_cmpgt_epi64(a, b);
  }
}

template <DataType T, ReduceOp Op>
inline __m256i combine_epi(__m256i a, __m256i b) {
  constexpr bool k8 = T == DataType::kInt8 || T == DataType::kUint8;
  constexpr bool k32 = T == DataType::kInt32 || T == DataType::kUint32;
  constexpr bool kUnsigned =
      T == DataType::kUint8 || T == DataType::kUint32 || T == DataType::kUint64;
  if constexpr (Op == ReduceOp::kSum) {
    if constexpr (k8) return _mm256_add_epi8(a, b);
    if constexpr (k32) return _mm256_add_epi32(a, b);
    if constexpr (!k8 && !k32) return _mm256_add_epi64(a, b);
  } else if constexpr (Op == ReduceOp::kProd) {
    if constexpr (k8) return mul_epi8(a, b);
    if constexpr (k32) return _mm256_mullo_epi32(a, b);
    if constexpr (!k8 && !k32) return mul_epi64(a, b);
  } else if constexpr (Op == ReduceOp::kBand) {
    return _mm256_and_si256(a, b);
  } else if constexpr (Op == ReduceOp::kBor) {
    return _mm256_or_si256(a, b);
  } else if constexpr (Op == ReduceOp::kBxor) {
    return _mm256_xor_si256(a, b);
  } else if constexpr (Op == ReduceOp::kMin) {
    if constexpr (T == DataType::kInt8) return _mm256_min_epi8(a, b);
    if constexpr (T == DataType::kUint8) return _mm256_min_epu8(a, b);
    if constexpr (T == DataType::kInt32) return _mm256_min_epi32(a, b);
    if constexpr (T == DataType::kUint32) return _mm256_min_epu32(a, b);
    if constexpr (!k8 && !k32) return _mm256_blendv_epi8(a, b, greater_epi64<kUnsigned>(a, b));
  } else {
    if constexpr (T == DataType::kInt8) return _mm256_max_epi8(a, b);
    if constexpr (T == DataType::kUint8) return _mm256_max_epu8(a, b);
    if constexpr (T == DataType::kInt32) return _mm256_max_epi32(a, b);
    if constexpr (T == DataType::kUint32) return _mm256_max_epu32(a, b);
    if constexpr (!k8 && !k32) return _mm256_blendv_epi8(b, a, greater_epi64<kUnsigned>(a, b));
  }
}

// One 32-byte vector of a 32/64-bit float or integer type.
template <DataType T, ReduceOp Op>
inline __m256i combine_vector(__m256i a, __m256i b) {
  if constexpr (T == DataType::kFloat32) {
    return _mm256_castps_si256(combine_ps<Op>(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
  } else if constexpr (T == DataType::kFloat64) {
    return _mm256_castpd_si256(combine_pd<Op>(_mm256_castsi256_pd(a), _mm256_castsi256_pd(b)));
  } else {
    return combine_epi<T, Op>(a, b);
  }
}

inline __m256i load(const char* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
inline void store(char* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// ---- 16-bit floats ----

constexpr int kRoundNearestEven = _MM_FROUND_TO_NEAREST_INT;

// min/max without conversion, the algorithm of min_max_16 in reduction.cc on 16 lanes: invert
// the magnitude of negative patterns to get keys that order like the values (-0 below +0), pick
// an operand; where either is a NaN, the OR of both made quiet.
template <uint16_t Inf, uint16_t Quiet, ReduceOp Op>
inline __m256i min_max_16(__m256i a, __m256i b) {
  const __m256i magnitude_bits = _mm256_set1_epi16(0x7fff);
  const __m256i inf = _mm256_set1_epi16(static_cast<short>(Inf));
  const __m256i magnitude_a = _mm256_and_si256(a, magnitude_bits);
  const __m256i magnitude_b = _mm256_and_si256(b, magnitude_bits);
  const __m256i key_a = _mm256_xor_si256(magnitude_a, _mm256_srai_epi16(a, 15));
  const __m256i key_b = _mm256_xor_si256(magnitude_b, _mm256_srai_epi16(b, 15));
  const __m256i pick_a =
      Op == ReduceOp::kMin ? _mm256_cmpgt_epi16(key_b, key_a) : _mm256_cmpgt_epi16(key_a, key_b);
  const __m256i either_nan =
      _mm256_or_si256(_mm256_cmpgt_epi16(magnitude_a, inf), _mm256_cmpgt_epi16(magnitude_b, inf));
  const __m256i nan =
      _mm256_or_si256(_mm256_or_si256(a, b), _mm256_set1_epi16(static_cast<short>(Quiet)));
  return _mm256_blendv_epi8(_mm256_blendv_epi8(b, a, pick_a), nan, either_nan);
}

// bfloat16 is the top half of a float: the even elements of a vector become floats by a shift
// left, the odd ones by clearing the low halves; no widening or packing shuffles.
inline __m256 bf16_even(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
inline __m256 bf16_odd(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

// Rounds float lanes to nearest-even bfloat16, left in the top half of each lane (the bottom
// half is garbage): add 0x7fff plus the lowest kept bit. A NaN is truncated and made quiet
// instead, as rounding could carry its payload into the exponent.
inline __m256i round_bf16_high(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd);
  const __m256i quiet_nan = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
  return _mm256_blendv_epi8(rounded, quiet_nan,
                            _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

// Even and odd float lanes back to 16 interleaved bfloat16.
inline __m256i combine_bf16(__m256 even, __m256 odd) {
  return _mm256_blend_epi16(_mm256_srli_epi32(round_bf16_high(even), 16), round_bf16_high(odd),
                            0xaa);
}

inline __m256 load_half(const char* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline void store_half(char* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, kRoundNearestEven));
}

// ---- one 32-byte step of every type ----

template <DataType T, ReduceOp Op>
inline void step(char* out, const char* x, const char* y) {
  constexpr bool kMinMax = Op == ReduceOp::kMin || Op == ReduceOp::kMax;
  if constexpr (T == DataType::kFloat16 && kMinMax) {
    store(out, min_max_16<0x7c00, 0x0200, Op>(load(x), load(y)));
  } else if constexpr (T == DataType::kBFloat16 && kMinMax) {
    store(out, min_max_16<0x7f80, 0x0040, Op>(load(x), load(y)));
  } else if constexpr (T == DataType::kFloat16) {
    // Widen 8 at a time (vcvtph2ps), combine in float, round once (vcvtps2ph).
    const __m256 low = combine_ps<Op>(load_half(x), load_half(y));
    const __m256 high = combine_ps<Op>(load_half(x + 16), load_half(y + 16));
    store_half(out, low);
    store_half(out + 16, high);
  } else if constexpr (T == DataType::kBFloat16) {
    const __m256i a = load(x), b = load(y);
    store(out, combine_bf16(combine_ps<Op>(bf16_even(a), bf16_even(b)),
                            combine_ps<Op>(bf16_odd(a), bf16_odd(b))));
  } else {
    store(out, combine_vector<T, Op>(load(x), load(y)));
  }
}

// Four steps per iteration, then single steps, then the tail of fewer than 32 bytes through
// zero-padded stack buffers. Each step reads its bytes of a and b before writing the same bytes
// of dst, so dst may be a or b.
template <DataType T, ReduceOp Op, size_t ElementBytes>
void kernel(void* dst, const void* a, const void* b, size_t count) {
  char* out = static_cast<char*>(dst);
  const char* x = static_cast<const char*>(a);
  const char* y = static_cast<const char*>(b);
  const size_t bytes = count * ElementBytes;
  size_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    step<T, Op>(out + i, x + i, y + i);
    step<T, Op>(out + i + 32, x + i + 32, y + i + 32);
    step<T, Op>(out + i + 64, x + i + 64, y + i + 64);
    step<T, Op>(out + i + 96, x + i + 96, y + i + 96);
  }
  for (; i + 32 <= bytes; i += 32) step<T, Op>(out + i, x + i, y + i);
  if (i < bytes) {
    alignas(32) char tail_x[32] = {};
    alignas(32) char tail_y[32] = {};
    std::memcpy(tail_x, x + i, bytes - i);
    std::memcpy(tail_y, y + i, bytes - i);
    step<T, Op>(tail_x, tail_x, tail_y);
    std::memcpy(out + i, tail_x, bytes - i);
  }
}

template <DataType T, ReduceOp Op>
ReduceKernel kernel_for_op() {
  if constexpr (T == DataType::kInt8 || T == DataType::kUint8) {
    return &kernel<T, Op, 1>;
  } else if constexpr (T == DataType::kFloat16 || T == DataType::kBFloat16) {
    return &kernel<T, Op, 2>;
  } else if constexpr (T == DataType::kInt32 || T == DataType::kUint32 || T == DataType::kFloat32) {
    return &kernel<T, Op, 4>;
  } else {
    return &kernel<T, Op, 8>;
  }
}

// The bitwise ops are one instruction for every integer width; no kernel for the float types.
template <DataType T>
ReduceKernel bitwise_kernel(ReduceOp op) {
  if constexpr (is_integer(T)) {
    if (op == ReduceOp::kBand) return kernel_for_op<T, ReduceOp::kBand>();
    if (op == ReduceOp::kBor) return kernel_for_op<T, ReduceOp::kBor>();
    if (op == ReduceOp::kBxor) return kernel_for_op<T, ReduceOp::kBxor>();
  }
  return nullptr;
}

template <DataType T>
ReduceKernel kernel_for_type(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return kernel_for_op<T, ReduceOp::kSum>();
    case ReduceOp::kProd:
      return kernel_for_op<T, ReduceOp::kProd>();
    case ReduceOp::kMin:
      return kernel_for_op<T, ReduceOp::kMin>();
    case ReduceOp::kMax:
      return kernel_for_op<T, ReduceOp::kMax>();
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return bitwise_kernel<T>(op);
    case ReduceOp::kCustom:
      break;
  }
  return nullptr;
}

// Conversion loops for the tests: 8 elements per step, the tail through a padded buffer.
template <typename In, typename Out, typename Step>
void convert(const In* in, Out* out, size_t count, Step step) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) step(in + i, out + i);
  if (i < count) {
    In tail_in[8] = {};
    Out tail_out[8] = {};
    std::memcpy(tail_in, in + i, (count - i) * sizeof(In));
    step(tail_in, tail_out);
    std::memcpy(out + i, tail_out, (count - i) * sizeof(Out));
  }
}

}  // namespace

ReduceKernel avx2_kernel(DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kInt8:
      return kernel_for_type<DataType::kInt8>(op);
    case DataType::kUint8:
      return kernel_for_type<DataType::kUint8>(op);
    case DataType::kInt32:
      return kernel_for_type<DataType::kInt32>(op);
    case DataType::kUint32:
      return kernel_for_type<DataType::kUint32>(op);
    case DataType::kInt64:
      return kernel_for_type<DataType::kInt64>(op);
    case DataType::kUint64:
      return kernel_for_type<DataType::kUint64>(op);
    case DataType::kFloat16:
      return kernel_for_type<DataType::kFloat16>(op);
    case DataType::kBFloat16:
      return kernel_for_type<DataType::kBFloat16>(op);
    case DataType::kFloat32:
      return kernel_for_type<DataType::kFloat32>(op);
    case DataType::kFloat64:
      return kernel_for_type<DataType::kFloat64>(op);
  }
  return nullptr;
}

void avx2_half_to_float(const uint16_t* in, float* out, size_t count) {
  convert(in, out, count, [](const uint16_t* i, float* o) {
    _mm256_storeu_ps(o, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(i))));
  });
}

void avx2_float_to_half(const float* in, uint16_t* out, size_t count) {
  convert(in, out, count, [](const float* i, uint16_t* o) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o),
                     _mm256_cvtps_ph(_mm256_loadu_ps(i), kRoundNearestEven));
  });
}

void avx2_bfloat16_to_float(const uint16_t* in, float* out, size_t count) {
  convert(in, out, count, [](const uint16_t* i, float* o) {
    // Like the scalar conversion, make NaN quiet (the kernels need not: narrowing does it).
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(i)));
    const __m256 f = bf16_even(v);
    const __m256 quiet = _mm256_and_ps(_mm256_cmp_ps(f, f, _CMP_UNORD_Q),
                                       _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000)));
    _mm256_storeu_ps(o, _mm256_or_ps(f, quiet));
  });
}

void avx2_float_to_bfloat16(const float* in, uint16_t* out, size_t count) {
  convert(in, out, count, [](const float* i, uint16_t* o) {
    // Eight floats as the even elements, zeros as the odd ones; keep the even halves.
    const __m256i packed = combine_bf16(_mm256_loadu_ps(i), _mm256_setzero_ps());
    const __m256i evens = _mm256_and_si256(packed, _mm256_set1_epi32(0xffff));
    const __m256i narrowed =
        _mm256_permute4x64_epi64(_mm256_packus_epi32(evens, evens), _MM_SHUFFLE(3, 1, 2, 0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm256_castsi256_si128(narrowed));
  });
}

}  // namespace gloo_lite::detail
