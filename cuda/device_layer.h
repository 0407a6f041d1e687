// The device layer under the CUDA staging pipeline (cuda/collectives.h): the few things the
// pipeline asks of a GPU. Two implementations:
//  - cuda_device_layer(): the CUDA runtime (streams, events, pinned memory, reduction kernels);
//    built when CMake finds nvcc (GLOO_LITE_BUILD_CUDA), otherwise it throws Unavailable.
//  - host_stand_in_layer() (cuda/host_stand_in.h): no GPU at all. "Device" memory is host
//    memory, every stream is a worker thread that runs its queue in order, after an injected
//    random delay per operation, so that a pipeline that forgets a wait, or waits on the wrong
//    event, reads or writes a chunk too early and produces a wrong value in the tests.
// Both follow CUDA's rules, which the pipeline relies on:
//  - operations enqueued on one stream run in order; different streams run independently;
//  - record(event, stream) captures the work enqueued on `stream` so far; wait_event and
//    synchronize_event wait for the most recent capture made before they were called (an event
//    recorded later does not count; a never-recorded event is complete);
//  - copies and kernels are asynchronous: their buffers belong to the stream until it passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gloo_lite/base/error.h"
#include "gloo_lite/types.h"

namespace gloo_lite::cuda {

// cudaStream_t / cudaEvent_t with the CUDA layer; the host stand-in's queue and marker with the
// host one. Opaque: pass what the layer's create_* returned (or, with the CUDA layer, any CUDA
// stream of the layer's device, the legacy default stream 0 included).
using Stream = void*;
using Event = void*;

// The layer cannot run here: no CUDA in this build, or no usable GPU (the message says which,
// with the CUDA error, e.g. "cudaGetDeviceCount: insufficient driver").
class Unavailable : public UnavailableError {
 public:
  using UnavailableError::UnavailableError;
};

class DeviceLayer {
 public:
  virtual ~DeviceLayer() = default;
  // "cuda (device 0: NVIDIA H200)", "host stand-in (delays up to 300 us)".
  virtual const char* name() const = 0;
  // Whether device memory is ordinary host memory (the host stand-in): tests fill and read it
  // directly instead of copying.
  virtual bool device_memory_is_host() const = 0;

  // Memory. Device memory is what the collectives take; pinned memory is page-locked host
  // memory the copy engines reach directly (the staging pool). Errors throw Error naming the
  // size.
  virtual void* allocate_device(size_t bytes) = 0;
  virtual void free_device(void* pointer) noexcept = 0;
  virtual void* allocate_pinned(size_t bytes) = 0;
  virtual void free_pinned(void* pointer) noexcept = 0;

  // Streams and events. Streams made here do not synchronise with the legacy default stream.
  virtual Stream create_stream() = 0;
  virtual void destroy_stream(Stream stream) noexcept = 0;
  virtual Event create_event() = 0;
  virtual void destroy_event(Event event) noexcept = 0;
  virtual void record(Event event, Stream stream) = 0;
  // Later work on `stream` waits until `event`'s last capture has completed (the host does not
  // wait).
  virtual void wait_event(Stream stream, Event event) = 0;
  // The host waits until `event`'s last capture has completed.
  virtual void synchronize_event(Event event) = 0;
  virtual void synchronize_stream(Stream stream) = 0;

  // Asynchronous work on a stream.
  virtual void copy_to_host(void* host, const void* device, size_t bytes, Stream stream) = 0;
  virtual void copy_to_device(void* device, const void* host, size_t bytes, Stream stream) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t bytes, Stream stream) = 0;
  // dst = op(dst, src) on device memory, elementwise, with reduction.h's rules (kAvg combines
  // as a sum; kCustom is InvalidArgument: a host function cannot run on the device).
  virtual void reduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                      Stream stream) = 0;
  // data /= ranks elementwise (kAvg's last step), with finish_average's rules.
  virtual void divide(void* data, size_t count, DataType type, int ranks, Stream stream) = 0;

  // A host-written word that streams can wait on: how a stream-ordered call holds the caller's
  // stream until the host part of the pipeline has finished. wait_counter enqueues "wait until
  // *counter >= value" on `stream`; set_counter (any thread) writes the word and lets waiters
  // go. The word lives in memory the device can read (mapped pinned memory with CUDA).
  virtual uint64_t* allocate_counter() = 0;
  virtual void free_counter(uint64_t* counter) noexcept = 0;
  virtual void wait_counter(Stream stream, uint64_t* counter, uint64_t value) = 0;
  virtual void set_counter(uint64_t* counter, uint64_t value) = 0;
};

// The CUDA layer on `device` (cudaSetDevice in every thread that uses it). Throws Unavailable
// when this build has no CUDA or cudaGetDeviceCount fails / finds no device.
std::shared_ptr<DeviceLayer> cuda_device_layer(int device = 0);
// Whether cuda_device_layer() can work here; when not, `why` (if given) says why: the tests'
// skip message.
bool cuda_available(std::string* why = nullptr);

}  // namespace gloo_lite::cuda
