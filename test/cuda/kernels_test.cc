// The CUDA layer's reduction and division code (cuda/kernels.cu) against gloo_lite's CPU
// kernels (gloo_lite/reduction.h), bit for bit, for every type and operation. The kernels'
// element functions are __host__ __device__, so this runs them on the host: it checks the
// arithmetic everywhere nvcc is, and a GPU run (Cuda/Pipeline.*) checks the launches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "gloo_lite/reduction.h"

namespace gloo_lite::cuda {
namespace {

constexpr DataType kTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                               DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                               DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                               DataType::kFloat64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kAvg, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};

// NaN payloads are unspecified (reduction_kernels.h): two NaNs of a float type match.
bool is_nan(DataType type, const uint8_t* element) {
  uint64_t bits = 0;
  std::memcpy(&bits, element, element_size(type));
  switch (type) {
    case DataType::kFloat16:
      return (bits & 0x7fff) > 0x7c00;
    case DataType::kBFloat16:
      return (bits & 0x7fff) > 0x7f80;
    case DataType::kFloat32:
      return (bits & 0x7fffffffu) > 0x7f800000u;
    case DataType::kFloat64:
      return (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default:
      return false;
  }
}

std::vector<uint8_t> random_bytes(size_t bytes, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<uint8_t> out(bytes);
  for (auto& byte : out) byte = static_cast<uint8_t>(random());
  return out;
}

void expect_same(DataType type, const std::vector<uint8_t>& expected,
                 const std::vector<uint8_t>& got, const std::string& what) {
  const size_t e = element_size(type);
  int reported = 0;
  for (size_t i = 0; i < expected.size() / e && reported < 3; ++i) {
    const uint8_t* want = expected.data() + i * e;
    const uint8_t* have = got.data() + i * e;
    if (std::memcmp(want, have, e) == 0) continue;
    if (is_nan(type, want) && is_nan(type, have)) continue;
    ADD_FAILURE() << what << ": element " << i << " differs from the CPU kernel";
    ++reported;
  }
}

TEST(CudaKernelsOnHost, ReduceMatchesTheCpuKernelsForEveryTypeAndOp) {
  constexpr size_t kCount = 4096;
  for (DataType type : kTypes) {
    for (ReduceOp op : kOps) {
      if (is_bitwise(op) && !is_integer(type)) continue;
      const size_t bytes = kCount * element_size(type);
      const auto seed = static_cast<uint64_t>(type) * 16 + static_cast<uint64_t>(op);
      std::vector<uint8_t> a = random_bytes(bytes, seed), b = random_bytes(bytes, ~seed);
      if (!is_integer(type)) {
        // +0 and -0 in both orders: min must give -0 and max +0 whatever the operand order.
        const size_t e = element_size(type);
        std::fill(a.begin(), a.begin() + 2 * e, 0);
        std::fill(b.begin(), b.begin() + 2 * e, 0);
        b[e - 1] = 0x80;      // element 0: a = +0, b = -0
        a[2 * e - 1] = 0x80;  // element 1: a = -0, b = +0 (the sign is the top bit, little endian)
      }
      std::vector<uint8_t> expected = a, got = a;
      reduce_into(expected.data(), b.data(), kCount, type, op);
      kernels::reduce_on_host(got.data(), b.data(), kCount, type, op);
      expect_same(type, expected, got, std::string(type_name(type)) + " " + op_name(op));
    }
  }
}

TEST(CudaKernelsOnHost, DivideMatchesFinishAverageForEveryType) {
  constexpr size_t kCount = 4096;
  for (DataType type : kTypes) {
    for (int ranks : {1, 3, 7}) {
      const std::vector<uint8_t> data =
          random_bytes(kCount * element_size(type), static_cast<uint64_t>(type) + 99);
      std::vector<uint8_t> expected = data, got = data;
      finish_average(expected.data(), kCount, type, ranks);
      kernels::divide_on_host(got.data(), kCount, type, ranks);
      expect_same(type, expected, got,
                  std::string(type_name(type)) + " / " + std::to_string(ranks));
    }
  }
}

}  // namespace
}  // namespace gloo_lite::cuda
