// Internal: the CUDA kernels of the CUDA device layer (kernels.cu), behind plain launch
// functions so that the layer itself (cuda_layer.cc) is ordinary C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gloo_lite/types.h"

namespace gloo_lite::cuda::kernels {

// dst = op(dst, src) elementwise on device memory with reduction.h's rules (kAvg combines as a
// sum). kCustom, or a bitwise op on a float type, is cudaErrorInvalidValue (the layer checks
// first). Returns the launch's error.
cudaError_t reduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                   cudaStream_t stream);
// data /= ranks elementwise (finish_average's rules).
cudaError_t divide(void* data, size_t count, DataType type, int ranks, cudaStream_t stream);
// One thread that sleeps until the mapped host word *counter >= value: holds `stream`.
cudaError_t wait_counter(const uint64_t* device_counter, uint64_t value, cudaStream_t stream);

// The kernels' element functions run in a host loop: what the tests compare with reduction.h's
// CPU kernels, bit for bit, on machines without a GPU (the launch itself is tested on a GPU).
void reduce_on_host(void* dst, const void* src, size_t count, DataType type, ReduceOp op);
void divide_on_host(void* data, size_t count, DataType type, int ranks);

}  // namespace gloo_lite::cuda::kernels
