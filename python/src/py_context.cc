// gloo_lite.Context itself (see py_context.h): its lifetime, how every call is started and
// waited for, count vectors, point-to-point calls. The collectives are in py_collectives.cc.
#include "py_context.h"

#include <nanobind/stl/string.h>

#include "gloo_lite/base/deadline.h"
#include "interrupt.h"

namespace gloo_lite::python {
namespace {

using std::chrono::milliseconds;

milliseconds to_ms(const char* call, std::optional<double> seconds) {
  if (!seconds) return milliseconds(0);
  if (!(*seconds > 0)) {
    throw nb::value_error((std::string(call) +
                           ": timeout must be a positive number of seconds "
                           "(or None for the context's), got " +
                           std::to_string(*seconds))
                              .c_str());
  }
  return milliseconds_from_seconds(*seconds, "timeout");  // saturates: 1e10 s waits, not fails
}

// A point-to-point call's one array and the Context arguments that go with it.
struct Message {
  void* data;
  size_t bytes;
  uint64_t tag;
  milliseconds deadline;
};

// Checks the tag, acquires `a` with `access` and checks the timeout, in that order; `a` is held
// in `operands` for as long as the call runs and, when written, is what the call returns.
Message message(const char* call, nb::handle a, Access access, long long tag,
                std::optional<double> timeout, Operands* operands) {
  if (tag < 0) {
    throw nb::value_error(
        (std::string(call) + ": tag must be in [0, 2**63), got " + std::to_string(tag)).c_str());
  }
  Buffer data = Buffer::acquire(a, call, "a", access);
  const Message m{data.data(), data.bytes(), static_cast<uint64_t>(tag), to_ms(call, timeout)};
  if (access == Access::kWrite) operands->result = data.object();
  operands->buffers.push_back(std::move(data));
  return m;
}

}  // namespace

PyContext::PyContext(std::shared_ptr<Context> context)
    : context_(std::move(context)), rank_(context_->rank()), size_(context_->size()) {}

std::shared_ptr<Context> PyContext::context(const char* call) const {
  if (!context_) {
    throw nb::value_error((std::string(call) + ": the context is closed").c_str());
  }
  return context_;
}

std::string PyContext::describe() const {
  return context_ ? context_->describe()
                  : "closed context (rank " + std::to_string(rank_) + " of " +
                        std::to_string(size_) + ")";
}

std::string PyContext::flight_record() const { return context("flight_record")->flight_record(); }

CollectiveOptions PyContext::collective_options(const char* call, const CallOptions& o) const {
  if (o.tag < 0 || o.tag > 0xffff) {
    throw nb::value_error((std::string(call) +
                           ": tag must be in [0, 65535] (a stream of "
                           "collectives), got " +
                           std::to_string(o.tag))
                              .c_str());
  }
  CollectiveOptions options;
  options.algorithm = o.algorithm;
  options.tag = static_cast<uint16_t>(o.tag);
  options.timeout = to_ms(call, o.timeout);
  return options;
}

nb::object PyContext::run(const char* call, bool async_op, Operands operands, const Start& start,
                          int* source) {
  std::shared_ptr<Context> ctx = context(call);
  // When close() ran in another thread meanwhile, this call's reference may be the last, and
  // destroying a context joins its transport's threads: not with the GIL held.
  struct DropLast {
    std::shared_ptr<Context>& ctx;
    ~DropLast() {
      if (ctx.use_count() == 1) {
        GilReleased release;
        ctx.reset();
      }
    }
  } drop_last{ctx};
  InterruptScope scope(ctx, call);
  if (!async_op && (scope.active() || !on_main_thread())) {
    // Waited for at once, and interruptible without slices: on the main thread the armed scope
    // fails the context on Ctrl-C (ending the call); elsewhere Python delivers no signals.
    released([&] { return start(*ctx, /*blocking=*/true); });
    return operands.result;
  }
  Work work = released([&] { return start(*ctx, /*blocking=*/false); });
  if (async_op) {
    return nb::cast(new PyWork(ctx, call, std::move(work), std::move(operands)),
                    nb::rv_policy::take_ownership);
  }
  wait_work(ctx, work, call, std::nullopt, &operands.buffers);
  if (source != nullptr) *source = work.source();
  return operands.result;
}

std::vector<size_t> PyContext::counts_of(const char* call, const char* name, nb::handle counts,
                                         const Buffer* mine, const CallOptions& o) {
  std::vector<size_t> result;
  if (counts.is_none()) {
    if (!mine) throw nb::value_error((std::string(call) + ": " + name + " is required").c_str());
    // Nobody said: ask every rank (one allgather of int64 before the call).
    std::vector<int64_t> all(static_cast<size_t>(size_));
    const auto own = static_cast<int64_t>(mine->count());
    CallOptions blocking = o;
    blocking.async_op = false;
    CollectiveOptions options = collective_options(call, blocking);
    run_forms(call, false, {}, GLOO_LITE_FORMS(allgather), &own, all.data(), size_t{1},
              DataType::kInt64, options);
    for (int64_t count : all) result.push_back(static_cast<size_t>(count));
    return result;
  }
  nb::object sequence = nb::borrow(counts);
  const Py_ssize_t length = PyObject_Length(sequence.ptr());
  if (length < 0) {
    PyErr_Clear();
    throw nb::type_error((std::string(call) + ": " + name + " must be a sequence of " +
                          std::to_string(size_) + " element counts")
                             .c_str());
  }
  if (length != size_) {
    throw nb::value_error((std::string(call) + ": " + name + " has " + std::to_string(length) +
                           " entries, expected one per rank (" + std::to_string(size_) + ")")
                              .c_str());
  }
  for (nb::handle item : sequence) {
    nb::object index = nb::steal(PyNumber_Index(item.ptr()));
    if (!index.is_valid()) {
      PyErr_Clear();
      throw nb::type_error((std::string(call) + ": " + name + " must hold integers").c_str());
    }
    int overflow = 0;  // -1, 1: below or past what a long long holds
    const long long count = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0 || count < 0) {
      const std::string entry = std::string(call) + ": " + name + "[" +
                                std::to_string(result.size()) + "] is " +
                                nb::cast<std::string>(nb::str(index));
      throw nb::value_error(
          (entry + (overflow > 0 ? ", more elements than any buffer holds" : ", a negative count"))
              .c_str());
    }
    result.push_back(static_cast<size_t>(count));
  }
  if (mine) require_count(call, *mine, result[static_cast<size_t>(rank_)], "counts[rank]");
  return result;
}

template <typename F>
nb::object PyContext::point_to_point(const char* call, const F& forms, nb::handle a, Access access,
                                     int peer, long long tag, std::optional<double> timeout,
                                     bool async_op) {
  Operands operands;
  const Message m = message(call, a, access, tag, timeout, &operands);
  return run_forms(call, async_op, std::move(operands), forms, peer, m.data, m.bytes, m.tag,
                   m.deadline);
}

nb::object PyContext::send(nb::handle a, int dst, long long tag, std::optional<double> timeout,
                           bool async_op) {
  return point_to_point("send", GLOO_LITE_MEMBER_FORMS(send), a, Access::kRead, dst, tag, timeout,
                        async_op);
}

nb::object PyContext::recv(nb::handle a, int src, long long tag, std::optional<double> timeout,
                           bool async_op) {
  return point_to_point("recv", GLOO_LITE_MEMBER_FORMS(recv), a, Access::kWrite, src, tag, timeout,
                        async_op);
}

int PyContext::recv_any(nb::handle a, const std::vector<int>& srcs, long long tag,
                        std::optional<double> timeout) {
  const char* call = "recv_any";
  Operands operands;
  const Message m = message(call, a, Access::kWrite, tag, timeout, &operands);
  // Not run_forms: the blocking form returns the source, the non-blocking one's Work holds it.
  int source = -1;
  run(
      call, false, std::move(operands),
      [&](Context& c, bool blocking) {
        if (!blocking) return c.irecv_any(srcs, m.data, m.bytes, m.tag, m.deadline);
        source = c.recv_any(srcs, m.data, m.bytes, m.tag, m.deadline);
        return Work();
      },
      &source);
  return source;
}

nb::object PyContext::split(int color, int key) {
  const std::shared_ptr<Context> ctx = context("split");
  InterruptScope scope(ctx, "split");
  std::shared_ptr<Context> child = released([&] { return ctx->split(color, key); });
  if (!child) return nb::none();
  return nb::cast(new PyContext(std::move(child)), nb::rv_policy::take_ownership);
}

void PyContext::abort(const std::string& reason) {
  const std::shared_ptr<Context> ctx = context("abort");
  released([&] { ctx->fail(reason); });
}

void PyContext::close() {
  std::shared_ptr<Context> closing = std::move(context_);
  context_.reset();
  if (!closing) return;
  // Destroying a context joins its transport's threads: not with the GIL held.
  GilReleased release;
  // Other threads' calls may hold the context still (their call's references): they end now,
  // with the cause, instead of running on until their peers come.
  closing->close();
  closing.reset();
}

}  // namespace gloo_lite::python
