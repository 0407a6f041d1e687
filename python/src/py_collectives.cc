// The collectives of gloo_lite.Context (see py_context.h). Each one: acquire and check every
// operand (nothing is sent before this passes), hold the buffers in Operands, then start the C++
// call (PyContext::run_forms).
#include <nanobind/stl/string.h>

#include "gloo_lite/argument_checks.h"
#include "gloo_lite/call_forms.h"
#include "gloo_lite/collective_info.h"
#include "interrupt.h"
#include "py_context.h"

namespace gloo_lite::python {
namespace {

const char* name_of(Collective collective) { return collective_name(collective); }

// ValueError for a count that `b` cannot be split by: "a has 10 elements, not a multiple of 4".
size_t block_count(const char* call, const Buffer& b, int size) {
  if (b.count() % static_cast<size_t>(size) != 0) {
    throw nb::value_error((std::string(call) + ": " + b.argument() + " has " +
                           std::to_string(b.count()) + " elements, not a multiple of the " +
                           std::to_string(size) + " ranks (it holds one block per rank)")
                              .c_str());
  }
  return b.count() / static_cast<size_t>(size);
}

// The shape of one of `b`'s per-rank blocks: b.shape[1:] when b is (size, ...), else 1-D.
std::vector<Py_ssize_t> block_shape(const Buffer& b, int size, size_t count) {
  const auto& shape = b.shape();
  if (shape.size() >= 2 && shape[0] == size) return {shape.begin() + 1, shape.end()};
  return {static_cast<Py_ssize_t>(count)};
}

// (size, *b.shape): one block per rank.
std::vector<Py_ssize_t> stacked_shape(const Buffer& b, int size) {
  std::vector<Py_ssize_t> shape{size};
  shape.insert(shape.end(), b.shape().begin(), b.shape().end());
  return shape;
}

// The output operand: `out`, checked against `like`'s type and `count` elements, or a new
// array of `shape` when `out` is None.
Buffer output_operand(const char* call, nb::handle out, const Buffer& like, size_t count,
                      const std::vector<Py_ssize_t>& shape, const char* why) {
  if (out.is_none()) {
    return Buffer::acquire(allocate(like.type(), shape), call, "out", Access::kWrite);
  }
  Buffer buffer = Buffer::acquire(out, call, "out", Access::kWrite);
  require_same_type(call, like, buffer);
  require_count(call, buffer, count, why);
  return buffer;
}

// output_operand() of `count` elements, allocated 1-D (the v collectives' packed blocks).
Buffer flat_output(const char* call, nb::handle out, const Buffer& like, size_t count,
                   const char* why) {
  return output_operand(call, out, like, count, {static_cast<Py_ssize_t>(count)}, why);
}

// sum(counts), or gloo_lite.InvalidArgument when it (or its bytes of `like`'s type) is past the
// largest buffer: a sum that wrapped would reach numpy as a negative dimension.
size_t sum(const char* call, const std::vector<size_t>& counts, const Buffer& like,
           const char* what) {
  return checked_total(call, counts, element_size(like.type()), what);
}

// Holds `b` in `operands` for as long as the call runs; returns its memory.
void* hold(Operands* operands, Buffer b) {
  void* data = b.data();
  operands->buffers.push_back(std::move(b));
  return data;
}

// hold(), and `b`'s array is what the call returns.
void* hold_result(Operands* operands, Buffer b) {
  operands->result = b.object();
  return hold(operands, std::move(b));
}

// The memory a collective reads and writes, and its element type.
struct Io {
  const void* in;
  void* out;
  DataType type;
};

// Holds a collective's input and its result (output_operand: `input`'s type).
Io hold(Operands* operands, Buffer input, Buffer result) {
  const DataType type = input.type();
  const void* in = hold(operands, std::move(input));
  return {in, hold_result(operands, std::move(result)), type};
}

// Holds a reduction's input and result: `input` itself when `out` is None (in place), else
// `out`, checked against it.
Io hold_reduced(const char* call, Operands* operands, Buffer input, nb::handle out) {
  if (!out.is_none()) {
    Buffer result = flat_output(call, out, input, input.count(), "a.size");
    return hold(operands, std::move(input), std::move(result));
  }
  const DataType type = input.type();
  void* data = hold_result(operands, std::move(input));
  return {data, data, type};
}

// scatter's and scatterv's `out` on a rank that passed no `a`: then it is required.
Buffer out_without_input(const char* call, nb::handle out) {
  if (out.is_none()) {
    throw nb::value_error(
        (std::string(call) + ": out is required on ranks other than the root when a is None")
            .c_str());
  }
  return Buffer::acquire(out, call, "out", Access::kWrite);
}

// The ReduceOp for `op`: a gloo_lite.ReduceOp, its name ("sum", "max", "bxor", ...) or a callable
// f(inout, in) that combines two numpy arrays into `inout` (the custom op).
ReduceOp reduce_op(const char* call, nb::handle op, DataType type, CollectiveOptions* options,
                   Operands* operands) {
  if (nb::isinstance<ReduceOp>(op)) return nb::cast<ReduceOp>(op);
  if (nb::isinstance<nb::str>(op)) {
    ReduceOp parsed = parse_op(nb::cast<std::string>(op));
    if (parsed == ReduceOp::kCustom) {
      throw nb::value_error((std::string(call) +
                             ": op='custom' needs the function itself: pass "
                             "op=f with f(inout, in) writing its result into inout")
                                .c_str());
    }
    return parsed;
  }
  if (PyCallable_Check(op.ptr())) {
    nb::object dtype = numpy_dtype(type);
    nb::object frombuffer = nb::module_::import_("numpy").attr("frombuffer");
    operands->objects.push_back(nb::borrow(op));
    operands->objects.push_back(dtype);
    operands->objects.push_back(frombuffer);
    // Raw pointers: the std::function may be copied by C++ without the GIL; the objects stay
    // alive in `operands` for as long as the call runs.
    options->custom = [call, function = op.ptr(), dtype = dtype.ptr(),
                       frombuffer = frombuffer.ptr(),
                       item = element_size(type)](void* inout, const void* in, size_t count) {
      if (interpreter_exiting()) {
        // Taking the GIL would end this thread (interrupt.h): fail the call instead.
        throw gloo_lite::Error(std::string(call) +
                               ": the custom reduction cannot run: Python is exiting");
      }
      nb::gil_scoped_acquire gil;
      try {
        const auto bytes = static_cast<Py_ssize_t>(count * item);
        nb::object a =
            nb::steal(PyMemoryView_FromMemory(static_cast<char*>(inout), bytes, PyBUF_WRITE));
        nb::object b = nb::steal(
            PyMemoryView_FromMemory(static_cast<char*>(const_cast<void*>(in)), bytes, PyBUF_READ));
        const nb::handle f(function), view(frombuffer), type(dtype);
        f(view(a, type), view(b, type));
      } catch (nb::python_error& e) {
        callback_raised(e, call);
      }
    };
    return ReduceOp::kCustom;
  }
  throw nb::type_error((std::string(call) +
                        ": op must be a gloo_lite.ReduceOp, one of 'sum', 'prod', 'min', "
                        "'max', 'avg', 'band', 'bor', 'bxor', or a callable f(inout, in); got " +
                        nb::inst_name(op).c_str())
                           .c_str());
}

}  // namespace

nb::object PyContext::allreduce(const CallOptions& o, nb::handle a, nb::handle op, nb::handle out) {
  const char* call = name_of(Collective::kAllreduce);
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", out.is_none() ? Access::kWrite : Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const ReduceOp rop = reduce_op(call, op, input.type(), &options, &operands);
  const size_t count = input.count();
  const Io io = hold_reduced(call, &operands, std::move(input), out);
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(allreduce), io.in, io.out,
                   count, io.type, rop, options);
}

nb::object PyContext::reduce(const CallOptions& o, nb::handle a, int root, nb::handle op,
                             nb::handle out) {
  const char* call = name_of(Collective::kReduce);
  Operands operands;
  const bool is_root = rank_ == root;
  Buffer input =
      Buffer::acquire(a, call, "a", is_root && out.is_none() ? Access::kWrite : Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const ReduceOp rop = reduce_op(call, op, input.type(), &options, &operands);
  const size_t count = input.count();
  const DataType type = input.type();
  // The result lands on the root only: elsewhere `out` is not looked at.
  const Io io = is_root ? hold_reduced(call, &operands, std::move(input), out)
                        : Io{hold(&operands, std::move(input)), nullptr, type};
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(reduce), io.in, io.out,
                   count, type, rop, root, options);
}

nb::object PyContext::reduce_scatter(const CallOptions& o, nb::handle a, nb::handle op,
                                     nb::handle out) {
  const char* call = name_of(Collective::kReduceScatter);
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const ReduceOp rop = reduce_op(call, op, input.type(), &options, &operands);
  const size_t count = block_count(call, input, size_);
  Buffer result =
      output_operand(call, out, input, count, block_shape(input, size_, count), "a.size / size");
  const Io io = hold(&operands, std::move(input), std::move(result));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(reduce_scatter), io.in,
                   io.out, count, io.type, rop, options);
}

nb::object PyContext::reduce_scatterv(const CallOptions& o, nb::handle a, nb::handle counts,
                                      nb::handle op, nb::handle out) {
  const char* call = "reduce_scatterv";
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const ReduceOp rop = reduce_op(call, op, input.type(), &options, &operands);
  const std::vector<size_t> recv = counts_of(call, "counts", counts, nullptr, o);
  require_count(call, input, sum(call, recv, input, "counts"), "sum(counts)");
  const size_t mine = recv[static_cast<size_t>(rank_)];
  Buffer result = flat_output(call, out, input, mine, "counts[rank]");
  const Io io = hold(&operands, std::move(input), std::move(result));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(reduce_scatterv), io.in,
                   io.out, recv, io.type, rop, options);
}

nb::object PyContext::allgather(const CallOptions& o, nb::handle a, nb::handle out) {
  const char* call = name_of(Collective::kAllgather);
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const size_t count = input.count();
  Buffer result =
      output_operand(call, out, input, count * size_, stacked_shape(input, size_), "size * a.size");
  const Io io = hold(&operands, std::move(input), std::move(result));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(allgather), io.in, io.out,
                   count, io.type, options);
}

nb::object PyContext::allgatherv(const CallOptions& o, nb::handle a, nb::handle counts,
                                 nb::handle out) {
  const char* call = "allgatherv";
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const std::vector<size_t> all = counts_of(call, "counts", counts, &input, o);
  const size_t total = sum(call, all, input, "counts");
  Buffer result = flat_output(call, out, input, total, "sum(counts)");
  const Io io = hold(&operands, std::move(input), std::move(result));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(allgatherv), io.in,
                   io.out, all, io.type, options);
}

nb::object PyContext::gather(const CallOptions& o, nb::handle a, int root, nb::handle out) {
  const char* call = name_of(Collective::kGather);
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const size_t count = input.count();
  const DataType type = input.type();
  void* output = nullptr;  // the root's only
  if (rank_ == root) {
    output = hold_result(&operands, output_operand(call, out, input, count * size_,
                                                   stacked_shape(input, size_), "size * a.size"));
  }
  const void* in = hold(&operands, std::move(input));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(gather), in, output,
                   count, type, root, options);
}

nb::object PyContext::gatherv(const CallOptions& o, nb::handle a, nb::handle counts, int root,
                              nb::handle out) {
  const char* call = "gatherv";
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const std::vector<size_t> all = counts_of(call, "counts", counts, &input, o);
  const DataType type = input.type();
  void* output = nullptr;  // the root's only
  if (rank_ == root) {
    const size_t total = sum(call, all, input, "counts");
    output = hold_result(&operands, flat_output(call, out, input, total, "sum(counts)"));
  }
  const void* in = hold(&operands, std::move(input));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(gatherv), in, output, all,
                   type, root, options);
}

// scatter and scatterv read `a` on the root only; elsewhere it may be None (then `out` is
// required) or an array shaped like the root's (then `out` may be left out and is allocated
// from it).
nb::object PyContext::scatter(const CallOptions& o, nb::handle a, int root, nb::handle out) {
  const char* call = name_of(Collective::kScatter);
  Operands operands;
  CollectiveOptions options = collective_options(call, o);
  Io io{nullptr, nullptr, DataType::kUint8};
  size_t count = 0;
  if (rank_ == root || !a.is_none()) {
    Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
    count = block_count(call, input, size_);
    Buffer result =
        output_operand(call, out, input, count, block_shape(input, size_, count), "a.size / size");
    io = hold(&operands, std::move(input), std::move(result));
  } else {
    Buffer result = out_without_input(call, out);
    count = result.count();
    io.type = result.type();
    io.out = hold_result(&operands, std::move(result));
  }
  if (rank_ != root) io.in = nullptr;
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(scatter), io.in, io.out,
                   count, io.type, root, options);
}

nb::object PyContext::scatterv(const CallOptions& o, nb::handle a, nb::handle counts, int root,
                               nb::handle out) {
  const char* call = "scatterv";
  Operands operands;
  CollectiveOptions options = collective_options(call, o);
  const std::vector<size_t> all = counts_of(call, "counts", counts, nullptr, o);
  const size_t mine = all[static_cast<size_t>(rank_)];
  Io io{nullptr, nullptr, DataType::kUint8};
  if (rank_ == root || !a.is_none()) {
    Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
    if (rank_ == root) require_count(call, input, sum(call, all, input, "counts"), "sum(counts)");
    Buffer result = flat_output(call, out, input, mine, "counts[rank]");
    io = hold(&operands, std::move(input), std::move(result));
  } else {
    Buffer result = out_without_input(call, out);
    require_count(call, result, mine, "counts[rank]");
    io.type = result.type();
    io.out = hold_result(&operands, std::move(result));
  }
  if (rank_ != root) io.in = nullptr;
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(scatterv), io.in, io.out,
                   all, io.type, root, options);
}

nb::object PyContext::broadcast(const CallOptions& o, nb::handle a, int root) {
  const char* call = name_of(Collective::kBroadcast);
  Operands operands;
  // The root only reads: a read-only array is fine there.
  Buffer data = Buffer::acquire(a, call, "a", rank_ == root ? Access::kRead : Access::kWrite);
  CollectiveOptions options = collective_options(call, o);
  const size_t count = data.count();
  const DataType type = data.type();
  void* pointer = hold_result(&operands, std::move(data));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(broadcast), pointer,
                   count, type, root, options);
}

nb::object PyContext::alltoall(const CallOptions& o, nb::handle a, nb::handle out) {
  const char* call = name_of(Collective::kAlltoall);
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const size_t count = block_count(call, input, size_);
  Buffer result = output_operand(call, out, input, input.count(), input.shape(), "a.size");
  const Io io = hold(&operands, std::move(input), std::move(result));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(alltoall), io.in, io.out,
                   count, io.type, options);
}

nb::object PyContext::alltoallv(const CallOptions& o, nb::handle a, nb::handle send_counts,
                                nb::handle recv_counts, nb::handle out) {
  const char* call = "alltoallv";
  Operands operands;
  Buffer input = Buffer::acquire(a, call, "a", Access::kRead);
  CollectiveOptions options = collective_options(call, o);
  const std::vector<size_t> send = counts_of(call, "send_counts", send_counts, nullptr, o);
  const std::vector<size_t> recv = counts_of(call, "recv_counts", recv_counts, nullptr, o);
  require_count(call, input, sum(call, send, input, "send_counts"), "sum(send_counts)");
  const size_t total = sum(call, recv, input, "recv_counts");
  Buffer result = flat_output(call, out, input, total, "sum(recv_counts)");
  const Io io = hold(&operands, std::move(input), std::move(result));
  return run_forms(call, o.async_op, std::move(operands), GLOO_LITE_FORMS(alltoallv), io.in, send,
                   io.out, recv, io.type, options);
}

nb::object PyContext::barrier(const CallOptions& o) {
  const char* call = name_of(Collective::kBarrier);
  return run_forms(call, o.async_op, {}, GLOO_LITE_FORMS(barrier), collective_options(call, o));
}

}  // namespace gloo_lite::python
