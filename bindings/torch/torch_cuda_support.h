// What the CUDA paths of the torch backend (torch_cuda.cc, torch_cuda_p2p.cc) share: torch's
// current stream of a device, the CPU tag their collectives use, and an output check.
//
// The stream comes from c10's device-generic stream API (Stream::native_handle), not from
// c10::cuda: the extension then builds against any torch, CUDA or not, and needs no CUDA
// headers.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <cstdint>
#include <vector>

#include "cuda/device_layer.h"

namespace gloo_lite::torch_backend {

// The CUDA calls of a backend run on their own tag of its context (a CPU barrier on the same
// context, tag 0, may run meanwhile).
constexpr uint16_t kCudaTag = 1;

inline cuda::Stream current_stream(const c10::Device& device) {
  c10::impl::VirtualGuardImpl guard(device.type());
  return guard.getStream(device).native_handle();
}

// Throws ValueError unless `output` is a dense CUDA tensor of `input`'s dtype and device with
// `numel` elements (`what` says where the number comes from).
void check_cuda_like(const char* collective, const at::Tensor& output, const at::Tensor& input,
                     int64_t numel, const char* what);

// Throws ValueError unless every tensor is a dense CUDA tensor of `like`'s dtype and device.
void check_same_cuda(const char* collective, const at::Tensor& like,
                     const std::vector<at::Tensor>& tensors);

}  // namespace gloo_lite::torch_backend
