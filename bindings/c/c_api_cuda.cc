// The C ABI's CUDA collectives (gloo_lite/gloo_lite.h, "CUDA collectives"): a communicator
// handle over gloo_lite::cuda::Communicator, and each collective's blocking and stream-ordered
// entry points from one start function, as in c_api_collectives.cc. Always compiled: without
// CUDA in the build, cuda_device_layer() throws cuda::Unavailable, which becomes
// GLOO_LITE_ERR_UNAVAILABLE.
#include <chrono>
#include <memory>

#include "bindings/c/c_api_support.h"
#include "cuda/collectives.h"
#include "cuda/host_stand_in.h"

// Marked live or destroyed as the other handles are (c_api_support.h: live, retire).
struct gloo_lite_cuda_comm {
  static constexpr uint64_t kLive = 0x6c6976652d636f6d;       // "live-com"
  static constexpr uint64_t kDestroyed = 0x646561642d636f6d;  // "dead-com"
  static constexpr const char* kDestroyedText =
      "is a destroyed CUDA communicator (gloo_lite_cuda_comm_destroy was called on it): it may "
      "not be used again; create a new one";
  static constexpr const char* kForeignText =
      "is not a live gloo_lite CUDA communicator (one from gloo_lite_cuda_comm_create)";
  uint64_t magic = kLive;
  // Keeps the context alive while the communicator's worker may still use it.
  std::shared_ptr<gloo_lite::Context> context;
  std::unique_ptr<gloo_lite::cuda::Communicator> communicator;
  // The communicator first: its worker may use the context until it is gone.
  void release() {
    communicator.reset();
    context.reset();
  }
};

using namespace gloo_lite;
using namespace gloo_lite::c_api;

namespace {

using Comm = gloo_lite_cuda_comm_t*;
using Opts = const gloo_lite_options_t*;
using Type = gloo_lite_datatype_t;
using Op = gloo_lite_op_t;

cuda::Communicator& comm_of(const gloo_lite_cuda_comm_t* handle) {
  return *live(handle, "comm").communicator;
}

std::shared_ptr<cuda::DeviceLayer> layer_for(int device, const gloo_lite_cuda_options_t* options) {
  if (device == GLOO_LITE_CUDA_HOST_STAND_IN) {
    cuda::HostStandInOptions stand_in;
    if (options != nullptr) {
      if (options->max_delay_us < 0) bad_argument("options->max_delay_us is negative");
      stand_in.max_delay = std::chrono::microseconds(options->max_delay_us);
    }
    return cuda::host_stand_in_layer(stand_in);
  }
  if (device < 0) {
    bad_argument("device " + std::to_string(device) +
                 " is neither a CUDA device index (>= 0) nor GLOO_LITE_CUDA_HOST_STAND_IN");
  }
  return cuda::cuda_device_layer(device);
}

cuda::PipelineOptions pipeline_of(const gloo_lite_cuda_options_t* options) {
  cuda::PipelineOptions pipeline;
  if (options == nullptr) return pipeline;
  if (options->slot_bytes != 0) pipeline.slot_bytes = options->slot_bytes;
  if (options->slots != 0) pipeline.slots = options->slots;
  if (options->reduce_on_device != 0) pipeline.reduce_on = cuda::ReduceOn::kDevice;
  return pipeline;
}

// One start function per collective: blocking waits for what the stream-ordered form started
// (the C++ blocking forms are exactly that).
Work finish(bool blocking, Work work) {
  if (blocking) work.wait();
  return work;
}

Work start_allreduce(bool blocking, Comm c, const void* in, void* out, size_t n, Type t, Op op,
                     void* s, Opts o) {
  return finish(blocking,
                comm_of(c).allreduce(in, out, n, type_of(t), op_of(op), s, options_of(o, op)));
}
Work start_broadcast(bool blocking, Comm c, void* data, size_t n, Type t, int root, void* s,
                     Opts o) {
  return finish(blocking, comm_of(c).broadcast(data, n, type_of(t), root, s, options_of(o)));
}
Work start_reduce(bool blocking, Comm c, const void* in, void* out, size_t n, Type t, Op op,
                  int root, void* s, Opts o) {
  return finish(blocking,
                comm_of(c).reduce(in, out, n, type_of(t), op_of(op), root, s, options_of(o, op)));
}
Work start_allgather(bool blocking, Comm c, const void* in, void* out, size_t n, Type t, void* s,
                     Opts o) {
  return finish(blocking, comm_of(c).allgather(in, out, n, type_of(t), s, options_of(o)));
}
Work start_reduce_scatter(bool blocking, Comm c, const void* in, void* out, size_t n, Type t, Op op,
                          void* s, Opts o) {
  return finish(blocking,
                comm_of(c).reduce_scatter(in, out, n, type_of(t), op_of(op), s, options_of(o, op)));
}
Work start_alltoall(bool blocking, Comm c, const void* in, void* out, size_t n, Type t, void* s,
                    Opts o) {
  return finish(blocking, comm_of(c).alltoall(in, out, n, type_of(t), s, options_of(o)));
}

// Point-to-point: the tag is checked here (the C++ API takes any uint64_t and leaves the check to
// the transport), so that a tag in the collectives' half fails at the call, naming it.
Work start_send(bool blocking, Comm c, int peer, const void* data, size_t bytes, uint64_t tag,
                void* s) {
  return finish(blocking, comm_of(c).send(data, bytes, peer, p2p_tag_of(tag), s));
}
Work start_recv(bool blocking, Comm c, int peer, void* data, size_t bytes, uint64_t tag, void* s) {
  return finish(blocking, comm_of(c).recv(data, bytes, peer, p2p_tag_of(tag), s));
}

// The stream-ordered forms' work out-pointer is optional (the stream carries the order);
// run_nonblocking requires one, so a NULL one gets a handle that is dropped here.
template <typename Start, typename... Args>
gloo_lite_result_t run_stream_ordered(const char* function, gloo_lite_work_t** work, Start start,
                                      Args... args) noexcept {
  gloo_lite_work_t* dropped = nullptr;
  gloo_lite_result_t result =
      run_nonblocking(function, work != nullptr ? work : &dropped, start, args...);
  delete dropped;
  return result;
}

}  // namespace

extern "C" {

gloo_lite_result_t gloo_lite_cuda_available(void) {
  return guarded(__func__, [] {
    std::string why;
    if (!cuda::cuda_available(&why)) throw cuda::Unavailable(why);
  });
}

gloo_lite_result_t gloo_lite_cuda_comm_create(gloo_lite_context_t* context, int device,
                                              const gloo_lite_cuda_options_t* options,
                                              gloo_lite_cuda_comm_t** comm) {
  if (comm != nullptr) *comm = nullptr;
  return guarded(__func__, [&] {
    required(comm, "comm");
    auto handle = std::make_unique<gloo_lite_cuda_comm>();
    context_of(context);  // a live handle
    handle->context = context->context;
    handle->communicator = std::make_unique<cuda::Communicator>(
        *handle->context, layer_for(device, options), pipeline_of(options));
    *comm = handle.release();
  });
}

gloo_lite_result_t gloo_lite_cuda_comm_destroy(gloo_lite_cuda_comm_t* comm) {
  return guarded(__func__, [&] {
    if (comm == nullptr) return;  // like free(NULL)
    live(comm, "comm");           // a destroyed handle is refused, not freed twice
    retire(std::unique_ptr<gloo_lite_cuda_comm>(comm));
  });
}

gloo_lite_result_t gloo_lite_cuda_comm_layer(const gloo_lite_cuda_comm_t* comm, const char** name) {
  return guarded(__func__, [&] { required(name, "name") = comm_of(comm).layer().name(); });
}

gloo_lite_result_t gloo_lite_cuda_comm_synchronize(gloo_lite_cuda_comm_t* comm) {
  return guarded(__func__, [&] { comm_of(comm).synchronize(); });
}

gloo_lite_result_t gloo_lite_cuda_stream_create(gloo_lite_cuda_comm_t* comm, void** stream) {
  return guarded(__func__,
                 [&] { required(stream, "stream") = comm_of(comm).layer().create_stream(); });
}
gloo_lite_result_t gloo_lite_cuda_stream_destroy(gloo_lite_cuda_comm_t* comm, void* stream) {
  return guarded(__func__, [&] { comm_of(comm).layer().destroy_stream(stream); });
}
gloo_lite_result_t gloo_lite_cuda_stream_synchronize(gloo_lite_cuda_comm_t* comm, void* stream) {
  return guarded(__func__, [&] { comm_of(comm).layer().synchronize_stream(stream); });
}

gloo_lite_result_t gloo_lite_cuda_allreduce(Comm c, const void* in, void* out, size_t n, Type t,
                                            Op op, void* s, Opts o) {
  return run_blocking(__func__, start_allreduce, c, in, out, n, t, op, s, o);
}
gloo_lite_result_t gloo_lite_cuda_iallreduce(Comm c, const void* in, void* out, size_t n, Type t,
                                             Op op, void* s, Opts o, gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_allreduce, c, in, out, n, t, op, s, o);
}

gloo_lite_result_t gloo_lite_cuda_broadcast(Comm c, void* data, size_t n, Type t, int root, void* s,
                                            Opts o) {
  return run_blocking(__func__, start_broadcast, c, data, n, t, root, s, o);
}
gloo_lite_result_t gloo_lite_cuda_ibroadcast(Comm c, void* data, size_t n, Type t, int root,
                                             void* s, Opts o, gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_broadcast, c, data, n, t, root, s, o);
}

gloo_lite_result_t gloo_lite_cuda_reduce(Comm c, const void* in, void* out, size_t n, Type t, Op op,
                                         int root, void* s, Opts o) {
  return run_blocking(__func__, start_reduce, c, in, out, n, t, op, root, s, o);
}
gloo_lite_result_t gloo_lite_cuda_ireduce(Comm c, const void* in, void* out, size_t n, Type t,
                                          Op op, int root, void* s, Opts o, gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_reduce, c, in, out, n, t, op, root, s, o);
}

gloo_lite_result_t gloo_lite_cuda_allgather(Comm c, const void* in, void* out, size_t n, Type t,
                                            void* s, Opts o) {
  return run_blocking(__func__, start_allgather, c, in, out, n, t, s, o);
}
gloo_lite_result_t gloo_lite_cuda_iallgather(Comm c, const void* in, void* out, size_t n, Type t,
                                             void* s, Opts o, gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_allgather, c, in, out, n, t, s, o);
}

gloo_lite_result_t gloo_lite_cuda_reduce_scatter(Comm c, const void* in, void* out, size_t n,
                                                 Type t, Op op, void* s, Opts o) {
  return run_blocking(__func__, start_reduce_scatter, c, in, out, n, t, op, s, o);
}
gloo_lite_result_t gloo_lite_cuda_ireduce_scatter(Comm c, const void* in, void* out, size_t n,
                                                  Type t, Op op, void* s, Opts o,
                                                  gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_reduce_scatter, c, in, out, n, t, op, s, o);
}

gloo_lite_result_t gloo_lite_cuda_alltoall(Comm c, const void* in, void* out, size_t n, Type t,
                                           void* s, Opts o) {
  return run_blocking(__func__, start_alltoall, c, in, out, n, t, s, o);
}
gloo_lite_result_t gloo_lite_cuda_ialltoall(Comm c, const void* in, void* out, size_t n, Type t,
                                            void* s, Opts o, gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_alltoall, c, in, out, n, t, s, o);
}

gloo_lite_result_t gloo_lite_cuda_send(Comm c, int peer, const void* data, size_t bytes,
                                       uint64_t tag, void* s) {
  return run_blocking(__func__, start_send, c, peer, data, bytes, tag, s);
}
gloo_lite_result_t gloo_lite_cuda_isend(Comm c, int peer, const void* data, size_t bytes,
                                        uint64_t tag, void* s, gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_send, c, peer, data, bytes, tag, s);
}

gloo_lite_result_t gloo_lite_cuda_recv(Comm c, int peer, void* data, size_t bytes, uint64_t tag,
                                       void* s) {
  return run_blocking(__func__, start_recv, c, peer, data, bytes, tag, s);
}
gloo_lite_result_t gloo_lite_cuda_irecv(Comm c, int peer, void* data, size_t bytes, uint64_t tag,
                                        void* s, gloo_lite_work_t** w) {
  return run_stream_ordered(__func__, w, start_recv, c, peer, data, bytes, tag, s);
}

}  // extern "C"
