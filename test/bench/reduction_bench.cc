// Reduction kernel throughput: dst = dst + src (what a ring reduce-scatter step does) for float32,
// float16, bfloat16 and int32, and dst = dst ^ src for int32, at 4 KiB (L1), 1 MiB (L2) and
// 64 MiB (DRAM) per buffer, AVX2 and portable kernels side by side.
//   ./gloo_lite_reduction_bench [--benchmark_filter=float32] [--benchmark_repetitions=5]
// bytes_per_second counts the bytes read (both operands, 2 x buffer size), comparable with a
// memory read bandwidth; `reduced` is the rate of one buffer's bytes, the unit of the cost
// model's GLOO_LITE_GAMMA_GBPS. The write stream adds half of bytes_per_second in traffic.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "gloo_lite/reduction_kernels.h"
#include "gloo_lite/types.h"

namespace {

using gloo_lite::DataType;
using gloo_lite::ReduceOp;
using gloo_lite::detail::KernelFamily;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<unsigned char, FreeDeleter>;

AlignedBuffer aligned_buffer(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  return AlignedBuffer(static_cast<unsigned char*>(p));
}

// Small values of each type (1.0, or 1 for int32) so that repeated sums stay normal numbers:
// subnormals would measure the FPU's slow path rather than the kernel.
void fill_ones(void* data, size_t count, DataType type) {
  for (size_t i = 0; i < count; ++i) {
    auto* bytes = static_cast<unsigned char*>(data);
    switch (type) {
      case DataType::kFloat32: {
        const float one = 1.0f;
        std::memcpy(bytes + i * 4, &one, 4);
        break;
      }
      case DataType::kFloat16: {
        const uint16_t one = gloo_lite::float_to_half(1.0f);
        std::memcpy(bytes + i * 2, &one, 2);
        break;
      }
      case DataType::kBFloat16: {
        const uint16_t one = gloo_lite::float_to_bfloat16(1.0f);
        std::memcpy(bytes + i * 2, &one, 2);
        break;
      }
      default: {
        const int32_t one = 1;
        std::memcpy(bytes + i * 4, &one, 4);
        break;
      }
    }
  }
}

void reduce(benchmark::State& state, DataType type, ReduceOp op, KernelFamily family) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / gloo_lite::element_size(type);
  AlignedBuffer dst = aligned_buffer(bytes), src = aligned_buffer(bytes);
  fill_ones(dst.get(), count, type);
  fill_ones(src.get(), count, type);
  const auto kernel = gloo_lite::detail::kernel_of(family, type, op);
  for (auto _ : state) {
    kernel(dst.get(), dst.get(), src.get(), count);
    benchmark::ClobberMemory();
  }
  const auto reduced = static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes);
  state.SetBytesProcessed(2 * reduced);
  state.counters["reduced"] = benchmark::Counter(
      static_cast<double>(reduced), benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
}

}  // namespace

int main(int argc, char** argv) {
  const bool avx2 = gloo_lite::detail::cpu_has_avx2_kernels();
  // Sums of the four types the collectives mostly reduce, and one bitwise op (all three are one
  // instruction per vector, the same loop).
  const std::pair<DataType, ReduceOp> cases[] = {
      {DataType::kFloat32, ReduceOp::kSum},  {DataType::kFloat16, ReduceOp::kSum},
      {DataType::kBFloat16, ReduceOp::kSum}, {DataType::kInt32, ReduceOp::kSum},
      {DataType::kInt32, ReduceOp::kBxor},
  };
  for (const auto& [type, op] : cases) {
    for (const KernelFamily family : {KernelFamily::kAvx2, KernelFamily::kPortable}) {
      if (family == KernelFamily::kAvx2 && !avx2) continue;
      const std::string name = std::string("reduce_") + gloo_lite::op_name(op) + "/" +
                               gloo_lite::type_name(type) + "/" +
                               (family == KernelFamily::kAvx2 ? "avx2" : "portable");
      benchmark::RegisterBenchmark(name.c_str(), reduce, type, op, family)
          ->Arg(4 << 10)
          ->Arg(1 << 20)
          ->Arg(64 << 20)
          ->ArgName("bytes");
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
