// The CUDA layer's kernels (cuda/kernels.h). The element functions are __host__ __device__: the
// same code runs on the host in reduce_on_host / divide_on_host, which the tests compare with
// gloo_lite's CPU kernels where no GPU is at hand. One reduction kernel and one division kernel per
// element type; the operation is a run-time argument, the same for every thread, so the switch
// costs no divergence and nvcc compiles 10 + 10 kernels rather than one per (type, op).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "cuda/kernels.h"

namespace gloo_lite::cuda::kernels {
namespace {

// Storage types of the 16-bit formats: the bits, combined in float.
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

__host__ __device__ float widen(Half x) { return __half2float(__ushort_as_half(x.bits)); }
__host__ __device__ float widen(BFloat x) { return __bfloat162float(__ushort_as_bfloat16(x.bits)); }
__host__ __device__ void narrow(float x, Half* out) {
  out->bits = __half_as_ushort(__float2half_rn(x));
}
__host__ __device__ void narrow(float x, BFloat* out) {
  out->bits = __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// The OR (or AND) of two floats' bit patterns.
template <typename F>
__host__ __device__ F combine_bits(F a, F b, bool use_or) {
  using Bits = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  Bits x, y;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  const Bits bits = use_or ? x | y : x & y;
  F out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

// Floats: IEEE sum/prod; min/max symmetric in their operands, by reduction_kernels.h's rule (the
// strictly smaller/larger operand, else the OR of the patterns for min and for a NaN, the AND for
// max: -0 below +0, a NaN of either side propagates), so every rank ends with the same bits.
template <typename F>
__host__ __device__ F combine_float(F a, F b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMin:
      if (a < b) return a;
      if (b < a) return b;
      return combine_bits(a, b, true);
    case ReduceOp::kMax:
      if (a > b) return a;
      if (b > a) return b;
      return combine_bits(a, b, isnan(a) || isnan(b));
    default:  // kSum, kAvg
      return a + b;
  }
}

// Integers: sum/prod wrap (on the unsigned type), min/max exact, band/bor/bxor on the bits.
template <typename T>
__host__ __device__ T combine_integer(T a, T b, ReduceOp op) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case ReduceOp::kProd:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case ReduceOp::kMin:
      return b < a ? b : a;
    case ReduceOp::kMax:
      return a < b ? b : a;
    case ReduceOp::kBand:
      return a & b;
    case ReduceOp::kBor:
      return a | b;
    case ReduceOp::kBxor:
      return a ^ b;
    default:  // kSum, kAvg
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  }
}

template <typename T>
__host__ __device__ void combine(T* dst, T src, ReduceOp op) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat>) {
    narrow(combine_float(widen(*dst), widen(src), op), dst);
  } else if constexpr (std::is_floating_point_v<T>) {
    *dst = combine_float(*dst, src, op);
  } else {
    *dst = combine_integer(*dst, src, op);
  }
}

template <typename T>
__host__ __device__ void divide_one(T* data, int ranks) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat>) {
    narrow(widen(*data) / static_cast<float>(ranks), data);
  } else {
    *data = static_cast<T>(*data / static_cast<T>(ranks));  // integers truncate toward zero
  }
}

template <typename T>
__global__ void reduce_kernel(T* dst, const T* src, size_t count, ReduceOp op) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    combine(dst + i, src[i], op);
  }
}

template <typename T>
__global__ void divide_kernel(T* data, size_t count, int ranks) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    divide_one(data + i, ranks);
  }
}

__global__ void wait_counter_kernel(const volatile unsigned long long* counter,
                                    unsigned long long value) {
  while (*counter < value) __nanosleep(1000);
}

constexpr unsigned kThreads = 256;

unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? blocks : 4096);  // grid-stride beyond
}

// Calls f(T{}) with the storage type of `type`; false for an invalid type.
template <typename F>
bool with_type(DataType type, F&& f) {
  switch (type) {
    case DataType::kInt8:
      f(int8_t{});
      return true;
    case DataType::kUint8:
      f(uint8_t{});
      return true;
    case DataType::kInt32:
      f(int32_t{});
      return true;
    case DataType::kUint32:
      f(uint32_t{});
      return true;
    case DataType::kInt64:
      f(int64_t{});
      return true;
    case DataType::kUint64:
      f(uint64_t{});
      return true;
    case DataType::kFloat16:
      f(Half{});
      return true;
    case DataType::kBFloat16:
      f(BFloat{});
      return true;
    case DataType::kFloat32:
      f(float{});
      return true;
    case DataType::kFloat64:
      f(double{});
      return true;
  }
  return false;
}

}  // namespace

cudaError_t reduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                   cudaStream_t stream) {
  if (op == ReduceOp::kCustom || (is_bitwise(op) && !is_integer(type))) {
    return cudaErrorInvalidValue;
  }
  if (count == 0) return cudaSuccess;
  const bool known = with_type(type, [&](auto tag) {
    using T = decltype(tag);
    reduce_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<T*>(dst), static_cast<const T*>(src), count, op);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t divide(void* data, size_t count, DataType type, int ranks, cudaStream_t stream) {
  if (ranks <= 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const bool known = with_type(type, [&](auto tag) {
    using T = decltype(tag);
    divide_kernel<T>
        <<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, ranks);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

void reduce_on_host(void* dst, const void* src, size_t count, DataType type, ReduceOp op) {
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      combine(static_cast<T*>(dst) + i, static_cast<const T*>(src)[i], op);
    }
  });
}

void divide_on_host(void* data, size_t count, DataType type, int ranks) {
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) divide_one(static_cast<T*>(data) + i, ranks);
  });
}

cudaError_t wait_counter(const uint64_t* device_counter, uint64_t value, cudaStream_t stream) {
  wait_counter_kernel<<<1, 1, 0, stream>>>(
      reinterpret_cast<const volatile unsigned long long*>(device_counter), value);
  return cudaGetLastError();
}

}  // namespace gloo_lite::cuda::kernels
