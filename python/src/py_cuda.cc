// gloo_lite.CudaCommunicator (see py_cuda.h).
#include "py_cuda.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/collectives.h"
#include "cuda/host_stand_in.h"
#include "device_array.h"
#include "interrupt.h"
#include "py_context.h"
#include "py_work.h"

namespace gloo_lite::python {
namespace {

using namespace nb::literals;

// The layer for `device`: a CUDA device index, or "host-stand-in" (tests without a GPU).
std::shared_ptr<cuda::DeviceLayer> layer_for(nb::handle device, double max_delay_us) {
  if (nb::isinstance<nb::str>(device)) {
    const std::string name = nb::cast<std::string>(device);
    if (name != "host-stand-in") {
      throw nb::value_error(("CudaCommunicator: device '" + name +
                             "' is neither a CUDA device index nor 'host-stand-in'")
                                .c_str());
    }
    if (max_delay_us < 0) throw nb::value_error("CudaCommunicator: max_delay_us is negative");
    cuda::HostStandInOptions options;
    options.max_delay = std::chrono::microseconds(static_cast<int64_t>(max_delay_us));
    return cuda::host_stand_in_layer(options);
  }
  const int index = nb::cast<int>(device);
  if (index < 0) {
    throw nb::value_error(
        ("CudaCommunicator: device " + std::to_string(index) + " is not a CUDA device index")
            .c_str());
  }
  return cuda::cuda_device_layer(index);
}

class PyCudaCommunicator {
 public:
  PyCudaCommunicator(PyContext& context, nb::handle device, size_t slot_bytes, int slots,
                     bool reduce_on_device, double max_delay_us)
      : context_(context.context("CudaCommunicator")) {
    cuda::PipelineOptions options;
    options.slot_bytes = slot_bytes;
    options.slots = slots;
    options.reduce_on = reduce_on_device ? cuda::ReduceOn::kDevice : cuda::ReduceOn::kHost;
    auto layer = layer_for(device, max_delay_us);
    communicator_ = std::make_unique<cuda::Communicator>(*context_, std::move(layer), options);
    // The stand-in has no legacy default stream: stream=None means a stream of our own there.
    if (communicator_->layer().device_memory_is_host()) {
      own_stream_ = communicator_->layer().create_stream();
    }
  }
  ~PyCudaCommunicator() { close(); }

  void close() {
    if (!communicator_) return;
    GilReleased release;  // waits for every call made
    if (own_stream_ != nullptr) communicator_->layer().destroy_stream(own_stream_);
    communicator_.reset();
  }

  std::string layer() { return comm("layer").layer().name(); }
  uintptr_t default_stream() const { return reinterpret_cast<uintptr_t>(own_stream_); }
  uintptr_t create_stream() {
    return reinterpret_cast<uintptr_t>(comm("create_stream").layer().create_stream());
  }
  void destroy_stream(nb::handle stream) {
    comm("destroy_stream").layer().destroy_stream(stream_of(stream));
  }
  void synchronize_stream(nb::handle stream) {
    cuda::Stream s = stream_of(stream);
    cuda::DeviceLayer& layer = comm("synchronize_stream").layer();
    GilReleased release;
    layer.synchronize_stream(s);
  }
  void synchronize() {
    cuda::Communicator& c = comm("synchronize");
    GilReleased release;
    c.synchronize();
  }

  nb::object allreduce(nb::handle a, nb::handle op, nb::handle out, nb::handle stream,
                       bool async_op, int tag) {
    const char* call = "allreduce";
    const cuda::Stream s = stream_of(stream);
    DeviceArray input = device_array(a, call, "a", out.is_none(), dlpack_stream(s));
    DeviceArray output =
        out.is_none() ? input : checked_output(call, out, s, input, input.count, "a.size");
    const ReduceOp reduce = op_of(call, op);
    return run(call, {input, output}, output, async_op, [&] {
      return comm(call).allreduce(input.data, output.data, input.count, input.type, reduce, s,
                                  options(tag));
    });
  }

  nb::object broadcast(nb::handle a, int root, nb::handle stream, bool async_op, int tag) {
    const char* call = "broadcast";
    const cuda::Stream s = stream_of(stream);
    DeviceArray data = device_array(a, call, "a", /*writable=*/true, dlpack_stream(s));
    return run(call, {data}, data, async_op, [&] {
      return comm(call).broadcast(data.data, data.count, data.type, root, s, options(tag));
    });
  }

  nb::object reduce(nb::handle a, int root, nb::handle op, nb::handle out, nb::handle stream,
                    bool async_op, int tag) {
    const char* call = "reduce";
    const cuda::Stream s = stream_of(stream);
    DeviceArray input = device_array(a, call, "a", out.is_none(), dlpack_stream(s));
    DeviceArray output =
        out.is_none() ? input : checked_output(call, out, s, input, input.count, "a.size");
    const ReduceOp reduce = op_of(call, op);
    return run(call, {input, output}, output, async_op, [&] {
      return comm(call).reduce(input.data, output.data, input.count, input.type, reduce, root, s,
                               options(tag));
    });
  }

  nb::object allgather(nb::handle a, nb::handle out, nb::handle stream, bool async_op, int tag) {
    const char* call = "allgather";
    const cuda::Stream s = stream_of(stream);
    DeviceArray input = device_array(a, call, "a", false, dlpack_stream(s));
    DeviceArray output = checked_output(call, out, s, input, input.count * size(), "size * a.size");
    return run(call, {input, output}, output, async_op, [&] {
      return comm(call).allgather(input.data, output.data, input.count, input.type, s,
                                  options(tag));
    });
  }

  nb::object reduce_scatter(nb::handle a, nb::handle out, nb::handle op, nb::handle stream,
                            bool async_op, int tag) {
    const char* call = "reduce_scatter";
    const cuda::Stream s = stream_of(stream);
    DeviceArray input = device_array(a, call, "a", false, dlpack_stream(s));
    const size_t block = block_of(call, input);
    DeviceArray output = checked_output(call, out, s, input, block, "a.size / size");
    const ReduceOp reduce = op_of(call, op);
    return run(call, {input, output}, output, async_op, [&] {
      return comm(call).reduce_scatter(input.data, output.data, block, input.type, reduce, s,
                                       options(tag));
    });
  }

  nb::object alltoall(nb::handle a, nb::handle out, nb::handle stream, bool async_op, int tag) {
    const char* call = "alltoall";
    const cuda::Stream s = stream_of(stream);
    DeviceArray input = device_array(a, call, "a", false, dlpack_stream(s));
    const size_t block = block_of(call, input);
    DeviceArray output = checked_output(call, out, s, input, input.count, "a.size");
    return run(call, {input, output}, output, async_op, [&] {
      return comm(call).alltoall(input.data, output.data, block, input.type, s, options(tag));
    });
  }

  // a's bytes to / from `peer`, matched by (peer, tag) in the order made.
  nb::object send(nb::handle a, int peer, int64_t tag, nb::handle stream, bool async_op) {
    const char* call = "send";
    const cuda::Stream s = stream_of(stream);
    const uint64_t wire_tag = p2p_tag(call, tag);
    DeviceArray data = device_array(a, call, "a", false, dlpack_stream(s));
    const size_t bytes = data.count * element_size(data.type);
    return run(call, {data}, data, async_op,
               [&] { return comm(call).send(data.data, bytes, peer, wire_tag, s); });
  }
  nb::object recv(nb::handle a, int peer, int64_t tag, nb::handle stream, bool async_op) {
    const char* call = "recv";
    const cuda::Stream s = stream_of(stream);
    const uint64_t wire_tag = p2p_tag(call, tag);
    DeviceArray data = device_array(a, call, "a", /*writable=*/true, dlpack_stream(s));
    const size_t bytes = data.count * element_size(data.type);
    return run(call, {data}, data, async_op,
               [&] { return comm(call).recv(data.data, bytes, peer, wire_tag, s); });
  }

 private:
  cuda::Communicator& comm(const char* call) const {
    if (!communicator_) {
      throw nb::value_error(
          (std::string("CudaCommunicator.") + call + ": the communicator is closed").c_str());
    }
    return *communicator_;
  }
  size_t size() const { return static_cast<size_t>(context_->size()); }

  // `out` as a device array of `input`'s type holding `count` elements; required (device memory
  // is the caller's to allocate).
  DeviceArray checked_output(const char* call, nb::handle out, cuda::Stream s,
                             const DeviceArray& input, size_t count, const char* why) const {
    if (out.is_none()) {
      throw nb::value_error((std::string("CudaCommunicator.") + call +
                             ": out is required (a device array of " + why + " = " +
                             std::to_string(count) + " elements)")
                                .c_str());
    }
    DeviceArray output = device_array(out, call, "out", /*writable=*/true, dlpack_stream(s));
    require_like(call, input, output, count, why);
    return output;
  }
  size_t block_of(const char* call, const DeviceArray& input) const {
    if (input.count % size() != 0) {
      throw nb::value_error((std::string("CudaCommunicator.") + call + ": a has " +
                             std::to_string(input.count) + " elements, not a multiple of the " +
                             std::to_string(size()) + " ranks (it holds one block per rank)")
                                .c_str());
    }
    return input.count / size();
  }
  static ReduceOp op_of(const char* call, nb::handle op) {
    if (nb::isinstance<ReduceOp>(op)) return nb::cast<ReduceOp>(op);
    if (nb::isinstance<nb::str>(op)) return parse_op(nb::cast<std::string>(op));
    throw nb::type_error((std::string("CudaCommunicator.") + call +
                          ": op must be a gloo_lite.ReduceOp or its name; custom callables "
                          "run on host memory only (gloo_lite.Context)")
                             .c_str());
  }
  static CollectiveOptions options(int tag) {
    CollectiveOptions o;
    o.tag = static_cast<uint16_t>(tag);
    return o;
  }
  // None: the legacy default stream (0) with CUDA, our own stream with the stand-in; an int (a
  // cudaStream_t's value); or an object with .cuda_stream (torch) or .ptr (CuPy).
  cuda::Stream stream_of(nb::handle stream) const {
    if (stream.is_none()) return own_stream_;
    nb::handle value = stream;
    nb::object attribute;
    if (nb::hasattr(stream, "cuda_stream")) {
      attribute = stream.attr("cuda_stream");
      value = attribute;
    } else if (nb::hasattr(stream, "ptr")) {
      attribute = stream.attr("ptr");
      value = attribute;
    }
    return reinterpret_cast<cuda::Stream>(nb::cast<uintptr_t>(value));
  }

  // The consumer's stream for __dlpack__(stream=...): per the DLPack protocol a CUDA producer
  // makes that stream wait for its pending work on the array, so the staging copies (on
  // streams ordered after `s`) never read it early. 1 names the legacy default stream (0 is
  // not a valid value there). With the host stand-in it is the stand-in stream's handle (no
  // real producer has kDLCUDA memory there; the tests check what is passed).
  static nb::object dlpack_stream(cuda::Stream s) {
    const auto value = reinterpret_cast<uintptr_t>(s);
    return nb::int_(value == 0 ? uintptr_t{1} : value);
  }
  // Point-to-point tags are the application's: 0 <= tag < 2^63 (the upper half belongs to the
  // collectives).
  static uint64_t p2p_tag(const char* call, int64_t tag) {
    if (tag < 0) {
      throw nb::value_error((std::string("CudaCommunicator.") + call + ": tag " +
                             std::to_string(tag) + " is negative; point-to-point tags are 0 and up")
                                .c_str());
    }
    return static_cast<uint64_t>(tag);
  }

  template <typename Start>
  nb::object run(const char* call, std::vector<DeviceArray> arrays, const DeviceArray& result,
                 bool async_op, const Start& start) {
    Operands operands;
    for (DeviceArray& array : arrays) operands.objects.push_back(array.owner);
    operands.result = result.owner;
    Work work;
    {
      GilReleased release;
      work = start();
    }
    auto handle = std::make_unique<PyWork>(context_, call, std::move(work), std::move(operands));
    if (async_op) return nb::cast(handle.release(), nb::rv_policy::take_ownership);
    return handle->result(std::nullopt);
  }

  std::shared_ptr<Context> context_;
  std::unique_ptr<cuda::Communicator> communicator_;
  cuda::Stream own_stream_ = nullptr;
};

constexpr const char* kStreamDoc =
    " stream: None (CUDA: the legacy default stream; host stand-in: the communicator's own), an "
    "int cudaStream_t, or a torch/CuPy stream object. async_op=True: stream-ordered, returns a "
    "Work that finishes when the stream has been let go; later work on the stream sees the "
    "result. Otherwise waits and returns the output array.";

}  // namespace

void bind_cuda(nb::module_& module) {
  module.def(
      "cuda_available",
      [] {
        std::string why;
        const bool available = cuda::cuda_available(&why);
        return nb::make_tuple(available, why);
      },
      "(True, '') when a CUDA device can be used here, else (False, why).");
  nb::class_<PyCudaCommunicator>(
      module, "CudaCommunicator",
      "The collectives on device arrays (__cuda_array_interface__ or DLPack on a CUDA device) "
      "through a pinned staging pipeline (docs/cuda.md). device: a CUDA device index, or "
      "'host-stand-in' (no GPU: 'device' memory is host memory, streams are worker threads with "
      "up to max_delay_us of injected delay; for tests). Raises gloo_lite.Error when CUDA is not "
      "built or no GPU is usable. Calls run in the order made, the same on every rank.")
      .def(nb::init<PyContext&, nb::handle, size_t, int, bool, double>(), "context"_a,
           "device"_a = 0, nb::kw_only(), "slot_bytes"_a = size_t{4} << 20, "slots"_a = 4,
           "reduce_on_device"_a = false, "max_delay_us"_a = 0.0, nb::keep_alive<1, 2>())
      .def_prop_ro("layer", &PyCudaCommunicator::layer, "The device layer's name.")
      .def_prop_ro("stream", &PyCudaCommunicator::default_stream,
                   "The stream stream=None means with the host stand-in (0 with CUDA).")
      .def("create_stream", &PyCudaCommunicator::create_stream, "A new stream of the layer.")
      .def("destroy_stream", &PyCudaCommunicator::destroy_stream, "stream"_a)
      .def("synchronize_stream", &PyCudaCommunicator::synchronize_stream, "stream"_a = nb::none(),
           "Wait until the stream has passed everything enqueued.")
      .def("synchronize", &PyCudaCommunicator::synchronize,
           "Wait for every call made; raises the first error among them.")
      .def("close", &PyCudaCommunicator::close, "Wait for every call, free the staging pool.")
      .def("allreduce", &PyCudaCommunicator::allreduce, "a"_a, "op"_a = "sum", "out"_a = nb::none(),
           nb::kw_only(), "stream"_a = nb::none(), "async_op"_a = false, "tag"_a = 0,
           (std::string("Allreduce a (in place) or into out.") + kStreamDoc).c_str())
      .def("broadcast", &PyCudaCommunicator::broadcast, "a"_a, "root"_a = 0, nb::kw_only(),
           "stream"_a = nb::none(), "async_op"_a = false, "tag"_a = 0,
           (std::string("Broadcast root's a into every rank's a.") + kStreamDoc).c_str())
      .def("reduce", &PyCudaCommunicator::reduce, "a"_a, "root"_a = 0, "op"_a = "sum",
           "out"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(), "async_op"_a = false,
           "tag"_a = 0,
           (std::string("Reduce to root (in place in a, or into out).") + kStreamDoc).c_str())
      .def("allgather", &PyCudaCommunicator::allgather, "a"_a, "out"_a = nb::none(), nb::kw_only(),
           "stream"_a = nb::none(), "async_op"_a = false, "tag"_a = 0,
           (std::string("out (size * a.size elements) gets block r from rank r.") + kStreamDoc)
               .c_str())
      .def("reduce_scatter", &PyCudaCommunicator::reduce_scatter, "a"_a, "out"_a = nb::none(),
           "op"_a = "sum", nb::kw_only(), "stream"_a = nb::none(), "async_op"_a = false,
           "tag"_a = 0,
           (std::string("out (a.size / size elements) gets block rank of a, reduced.") + kStreamDoc)
               .c_str())
      .def("alltoall", &PyCudaCommunicator::alltoall, "a"_a, "out"_a = nb::none(), nb::kw_only(),
           "stream"_a = nb::none(), "async_op"_a = false, "tag"_a = 0,
           (std::string("Block j of rank i goes to block i of rank j.") + kStreamDoc).c_str())
      .def("send", &PyCudaCommunicator::send, "a"_a, "peer"_a, "tag"_a = 0, nb::kw_only(),
           "stream"_a = nb::none(), "async_op"_a = false,
           (std::string("Send a's bytes to peer; tag: a point-to-point tag (0 <= tag < 2^63), "
                        "matched with peer's recv of the same tag in order. The receive must "
                        "name the same size.") +
            kStreamDoc)
               .c_str())
      .def("recv", &PyCudaCommunicator::recv, "a"_a, "peer"_a, "tag"_a = 0, nb::kw_only(),
           "stream"_a = nb::none(), "async_op"_a = false,
           (std::string("Receive peer's send of the same tag into a (exactly a's bytes).") +
            kStreamDoc)
               .c_str());
}

}  // namespace gloo_lite::python
