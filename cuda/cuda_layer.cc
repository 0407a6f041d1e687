// The CUDA device layer (cuda/device_layer.h) on the CUDA runtime; kernels in kernels.cu.
#include <cuda_runtime_api.h>

#include <string>

#include "cuda/device_layer.h"
#include "cuda/kernels.h"

namespace gloo_lite::cuda {
namespace {

void check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) {
    throw Error("cuda " + what + ": " + cudaGetErrorName(status) + " (" +
                cudaGetErrorString(status) + ")");
  }
}

cudaStream_t as_stream(Stream stream) { return static_cast<cudaStream_t>(stream); }
cudaEvent_t as_event(Event event) { return static_cast<cudaEvent_t>(event); }

class CudaLayer final : public DeviceLayer {
 public:
  explicit CudaLayer(int device) : device_(device) {
    bind();
    cudaDeviceProp properties{};
    check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
    name_ = "cuda (device " + std::to_string(device) + ": " + properties.name + ")";
  }

  const char* name() const override { return name_.c_str(); }
  bool device_memory_is_host() const override { return false; }

  void* allocate_device(size_t bytes) override {
    bind();
    void* pointer = nullptr;
    check(cudaMalloc(&pointer, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes");
    return pointer;
  }
  void free_device(void* pointer) noexcept override { cudaFree(pointer); }
  void* allocate_pinned(size_t bytes) override {
    bind();
    void* pointer = nullptr;
    check(cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable),
          "cudaHostAlloc of " + std::to_string(bytes) + " pinned bytes");
    return pointer;
  }
  void free_pinned(void* pointer) noexcept override { cudaFreeHost(pointer); }

  Stream create_stream() override {
    bind();
    cudaStream_t stream = nullptr;
    // Non-blocking: the pipeline's copies must not wait for (or hold) the legacy stream, where
    // a caller's stream-ordered call may be holding on the counter.
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    return stream;
  }
  void destroy_stream(Stream stream) noexcept override { cudaStreamDestroy(as_stream(stream)); }
  Event create_event() override {
    bind();
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    return event;
  }
  void destroy_event(Event event) noexcept override { cudaEventDestroy(as_event(event)); }
  void record(Event event, Stream stream) override {
    bind();
    check(cudaEventRecord(as_event(event), as_stream(stream)), "cudaEventRecord");
  }
  void wait_event(Stream stream, Event event) override {
    bind();
    check(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0), "cudaStreamWaitEvent");
  }
  void synchronize_event(Event event) override {
    check(cudaEventSynchronize(as_event(event)), "cudaEventSynchronize");
  }
  void synchronize_stream(Stream stream) override {
    bind();
    check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
  }

  void copy_to_host(void* host, const void* device, size_t bytes, Stream stream) override {
    copy(host, device, bytes, cudaMemcpyDeviceToHost, stream);
  }
  void copy_to_device(void* device, const void* host, size_t bytes, Stream stream) override {
    copy(device, host, bytes, cudaMemcpyHostToDevice, stream);
  }
  void copy_on_device(void* dst, const void* src, size_t bytes, Stream stream) override {
    copy(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
  }
  void reduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
              Stream stream) override {
    if (op == ReduceOp::kCustom) {
      throw InvalidArgument("cuda reduce: a custom operation cannot run on the device");
    }
    bind();
    check(kernels::reduce(dst, src, count, type, op, as_stream(stream)),
          std::string("reduction kernel (") + type_name(type) + " " + op_name(op) + ", " +
              std::to_string(count) + " elements)");
  }
  void divide(void* data, size_t count, DataType type, int ranks, Stream stream) override {
    bind();
    check(kernels::divide(data, count, type, ranks, as_stream(stream)),
          std::string("division kernel (") + type_name(type) + ")");
  }

  uint64_t* allocate_counter() override {
    bind();
    void* pointer = nullptr;
    check(cudaHostAlloc(&pointer, sizeof(uint64_t), cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc of the mapped counter");
    *static_cast<uint64_t*>(pointer) = 0;
    return static_cast<uint64_t*>(pointer);
  }
  void free_counter(uint64_t* counter) noexcept override { cudaFreeHost(counter); }
  void wait_counter(Stream stream, uint64_t* counter, uint64_t value) override {
    bind();
    void* device_counter = nullptr;
    check(cudaHostGetDevicePointer(&device_counter, counter, 0), "cudaHostGetDevicePointer");
    check(kernels::wait_counter(static_cast<const uint64_t*>(device_counter), value,
                                as_stream(stream)),
          "counter wait kernel");
  }
  void set_counter(uint64_t* counter, uint64_t value) override {
    // Release: the kernel that sees the value must see every host write before it.
    __atomic_store_n(counter, value, __ATOMIC_RELEASE);
  }

 private:
  // The runtime's current device is per thread: the pipeline's worker and the callers' threads
  // each bind before they call.
  void bind() { check(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")"); }

  void copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, Stream stream) {
    bind();
    check(cudaMemcpyAsync(dst, src, bytes, kind, as_stream(stream)),
          "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes");
  }

  const int device_;
  std::string name_;
};

}  // namespace

bool cuda_available(std::string* why) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  std::string reason;
  if (status != cudaSuccess) {
    reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(status) + " (" +
             cudaGetErrorString(status) + ")";
  } else if (devices == 0) {
    reason = "cudaGetDeviceCount: no CUDA device";
  }
  if (why != nullptr) *why = reason;
  return reason.empty();
}

std::shared_ptr<DeviceLayer> cuda_device_layer(int device) {
  std::string why;
  if (!cuda_available(&why)) throw Unavailable("cuda device layer: " + why);
  return std::make_shared<CudaLayer>(device);
}

}  // namespace gloo_lite::cuda
