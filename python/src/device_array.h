// Device-array operands of gloo_lite.CudaCommunicator: objects exposing
// __cuda_array_interface__ (CuPy, Numba, torch) or DLPack (__dlpack__ / __dlpack_device__ with a
// CUDA device). As for host buffers (buffer.h), everything a call needs (element type,
// C-contiguity, element count, that the memory is on a device) is checked here, before anything
// is enqueued, so that a bad argument raises TypeError or ValueError naming the call and the
// argument.
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gloo_lite/types.h"

namespace gloo_lite::python {

namespace nb = nanobind;

struct DeviceArray {
  void* data = nullptr;
  size_t count = 0;
  DataType type = DataType::kUint8;
  std::vector<int64_t> shape;
  // CUDA device of the memory (-1: unknown, e.g. __cuda_array_interface__, which does not say).
  int device = -1;
  // What keeps the memory alive while the call runs (the object itself, or the DLPack tensor).
  nb::object owner;
  const char* argument = "";
};

// `object`'s device memory for `call` (e.g. "allreduce"), where it is argument `argument`;
// `writable` when the call writes it. TypeError: neither interface, a CPU array (DLPack device
// kDLCPU, or a buffer-protocol object such as a numpy array), or an element type gloo_lite has
// no DataType for. ValueError: not C-contiguous, or read-only where written. `dlpack_stream`
// is passed as __dlpack__(stream=...) (the stream the call's copies are ordered after; None:
// none given), so that the producer orders its pending work on the array before it.
DeviceArray device_array(nb::handle object, const char* call, const char* argument, bool writable,
                         nb::handle dlpack_stream);

// TypeError unless `b` has `a`'s element type; ValueError unless `b` holds `expected` elements
// (`why` says where the number comes from).
void require_like(const char* call, const DeviceArray& a, const DeviceArray& b, size_t expected,
                  const char* why);

}  // namespace gloo_lite::python
