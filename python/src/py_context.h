// gloo_lite.Context: one communicator, with every collective and point-to-point call on
// buffer-protocol objects. Each call checks its arrays (buffer.h), then with the GIL released
// starts the C++ call (gloo_lite/call_forms.h): its non-blocking form, returning a Work
// (async_op=True) or waited for in slices (interrupt.h), or its blocking form in this thread; a
// call waited for returns the result array.
#pragma once

#include <nanobind/nanobind.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gloo_lite/call_forms.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "py_work.h"

namespace gloo_lite::python {

namespace nb = nanobind;

// The keyword-only options every collective takes.
struct CallOptions {
  std::string algorithm = "auto";
  long long tag = 0;
  std::optional<double> timeout;  // seconds; None: the context's
  bool async_op = false;
};

class PyContext {
 public:
  explicit PyContext(std::shared_ptr<Context> context);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool closed() const { return context_ == nullptr; }
  std::string describe() const;
  std::string flight_record() const;

  nb::object allreduce(const CallOptions& o, nb::handle a, nb::handle op, nb::handle out);
  nb::object reduce(const CallOptions& o, nb::handle a, int root, nb::handle op, nb::handle out);
  nb::object reduce_scatter(const CallOptions& o, nb::handle a, nb::handle op, nb::handle out);
  nb::object reduce_scatterv(const CallOptions& o, nb::handle a, nb::handle counts, nb::handle op,
                             nb::handle out);
  nb::object allgather(const CallOptions& o, nb::handle a, nb::handle out);
  nb::object allgatherv(const CallOptions& o, nb::handle a, nb::handle counts, nb::handle out);
  nb::object gather(const CallOptions& o, nb::handle a, int root, nb::handle out);
  nb::object gatherv(const CallOptions& o, nb::handle a, nb::handle counts, int root,
                     nb::handle out);
  nb::object scatter(const CallOptions& o, nb::handle a, int root, nb::handle out);
  nb::object scatterv(const CallOptions& o, nb::handle a, nb::handle counts, int root,
                      nb::handle out);
  nb::object broadcast(const CallOptions& o, nb::handle a, int root);
  nb::object alltoall(const CallOptions& o, nb::handle a, nb::handle out);
  nb::object alltoallv(const CallOptions& o, nb::handle a, nb::handle send_counts,
                       nb::handle recv_counts, nb::handle out);
  nb::object barrier(const CallOptions& o);

  // Point-to-point: tag in [0, 2^63), timeout in seconds (None: the context's).
  nb::object send(nb::handle a, int dst, long long tag, std::optional<double> timeout,
                  bool async_op);
  nb::object recv(nb::handle a, int src, long long tag, std::optional<double> timeout,
                  bool async_op);
  int recv_any(nb::handle a, const std::vector<int>& srcs, long long tag,
               std::optional<double> timeout);

  nb::object split(int color, int key);
  void abort(const std::string& reason);
  void close();

  // The C++ context; ValueError naming `call` once closed (also for CudaCommunicator). A copy,
  // not the member: close() from another thread empties the member while a call still runs.
  std::shared_ptr<Context> context(const char* call) const;

 private:
  // Starts the call: its non-blocking form (returning the Work), or with `blocking` its
  // blocking form (returning an empty Work once done), so that a call Python waits for at once
  // runs in this thread, as C++'s blocking calls do, with no hand-off to the stream's worker.
  using Start = std::function<Work(Context&, bool blocking)>;
  // Starts the call and, unless async_op, waits for it; returns the result or a Work.
  nb::object run(const char* call, bool async_op, Operands operands, const Start& start,
                 int* source = nullptr);
  // run() with `forms` (gloo_lite/call_forms.h) on this context and `args`, which the Start holds
  // by reference: run() calls it before returning.
  template <typename F, typename... Args>
  nb::object run_forms(const char* call, bool async_op, Operands operands, const F& forms,
                       const Args&... args) {
    return run(call, async_op, std::move(operands),
               [&](Context& c, bool blocking) { return forms(blocking, c, args...); });
  }
  // send and recv: `forms` on (peer, a's memory, its bytes, tag, timeout), `a` acquired with
  // `access` (recv writes it and returns it). Defined in py_context.cc, its only user.
  template <typename F>
  nb::object point_to_point(const char* call, const F& forms, nb::handle a, Access access, int peer,
                            long long tag, std::optional<double> timeout, bool async_op);
  CollectiveOptions collective_options(const char* call, const CallOptions& o) const;
  // Per-rank element counts: from `counts` (length size), or exchanged with an allgather when
  // it is None and `mine` (this rank's array, when it holds counts[rank]) is given; ValueError
  // unless `mine` holds counts[rank] elements.
  std::vector<size_t> counts_of(const char* call, const char* name, nb::handle counts,
                                const Buffer* mine, const CallOptions& o);

  std::shared_ptr<Context> context_;
  int rank_;
  int size_;
};

void bind_context(nb::module_& module);

}  // namespace gloo_lite::python
