// The Python signatures of gloo_lite.Context and the module-level init functions.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collective_info.h"
#include "gloo_lite/knobs.h"
#include "interrupt.h"
#include "py_context.h"
#include "rendezvous/store.h"
#include "rendezvous/stores.h"

namespace gloo_lite::python {
namespace {

using namespace nb::literals;

// Adapts a method taking CallOptions first to Python's keyword-only tail
// (algorithm, tag, timeout, async_op), which every collective shares.
template <typename... Args>
auto with_options(nb::object (PyContext::*method)(const CallOptions&, Args...)) {
  return [method](PyContext& self, Args... args, const std::string& algorithm, long long tag,
                  std::optional<double> timeout, bool async_op) {
    return (self.*method)(CallOptions{algorithm, tag, timeout, async_op}, args...);
  };
}

template <typename... Args, typename... Extra>
void def_collective(nb::class_<PyContext>& cls, const char* name,
                    nb::object (PyContext::*method)(const CallOptions&, Args...), const char* doc,
                    const Extra&... extra) {
  cls.def(name, with_options(method), extra..., nb::kw_only(), "algorithm"_a = "auto", "tag"_a = 0,
          "timeout"_a = nb::none(), "async_op"_a = false, doc);
}

using PointToPoint = nb::object (PyContext::*)(nb::handle, int, long long, std::optional<double>,
                                               bool);

// send or recv (async_op keyword-only) and its twin isend or irecv (always async_op=True);
// `peer` names the rank argument.
void def_point_to_point(nb::class_<PyContext>& cls, const char* name, const char* async_name,
                        PointToPoint method, const char* peer, const char* doc,
                        const char* async_doc) {
  cls.def(name, method, "a"_a, nb::arg(peer), "tag"_a = 0, nb::kw_only(), "timeout"_a = nb::none(),
          "async_op"_a = false, doc);
  cls.def(
      async_name,
      [method](PyContext& c, nb::handle a, int peer, long long tag, std::optional<double> timeout) {
        return (c.*method)(a, peer, tag, timeout, true);
      },
      "a"_a, nb::arg(peer), "tag"_a = 0, nb::kw_only(), "timeout"_a = nb::none(), async_doc);
}

std::chrono::milliseconds context_timeout(std::optional<double> seconds) {
  if (!seconds) return std::chrono::milliseconds(0);
  if (!(*seconds > 0)) throw nb::value_error("init: timeout must be a positive number of seconds");
  return milliseconds_from_seconds(*seconds, "init: timeout");  // saturates, as every door
}

PyContext* init_from_environment(std::optional<double> timeout) {
  ContextOptions options;
  options.timeout = context_timeout(timeout);
  std::shared_ptr<Context> context = released([&] { return init_from_env(options); });
  return new PyContext(std::move(context));
}

PyContext* init_explicit(const std::string& store_url, int rank, int size,
                         std::optional<double> timeout, const std::string& prefix) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw nb::value_error(("init: need 0 <= rank < size, got rank=" + std::to_string(rank) +
                           ", size=" + std::to_string(size))
                              .c_str());
  }
  ContextOptions options;
  options.timeout = context_timeout(timeout);
  std::shared_ptr<Context> context = released([&] {
    log_set_rank(rank);
    validate_knobs();
    if (options.timeout.count() <= 0) options.timeout = knob_ms("GLOO_LITE_TIMEOUT_MS");
    std::shared_ptr<Store> store = open_store(store_url, Deadline::after(options.timeout));
    if (!prefix.empty()) store = make_prefix_store(std::move(store), prefix);
    return Context::create(std::move(store), rank, size, create_device_from_env(), options);
  });
  return new PyContext(std::move(context));
}

nb::list collective_table() {
  nb::list table;
  for (const CollectiveInfo& info : kCollectives) {
    nb::dict entry;
    entry["name"] = info.name;
    entry["rooted"] = info.rooted;
    entry["has_op"] = info.has_op;
    entry["per_rank_blocks"] = info.per_rank_blocks;
    entry["per_pair_blocks"] = info.per_pair_blocks;
    entry["moves_data"] = info.moves_data;
    table.append(entry);
  }
  return table;
}

}  // namespace

void bind_context(nb::module_& m) {
  nb::enum_<ReduceOp>(m, "ReduceOp", "Reduction operations ('sum', ... as strings work too).")
      .value("SUM", ReduceOp::kSum)
      .value("PROD", ReduceOp::kProd)
      .value("MIN", ReduceOp::kMin)
      .value("MAX", ReduceOp::kMax)
      .value("AVG", ReduceOp::kAvg)
      .value("BAND", ReduceOp::kBand)  // the bitwise ops: integer dtypes only
      .value("BOR", ReduceOp::kBor)
      .value("BXOR", ReduceOp::kBxor);

  m.def("_collectives", &collective_table,
        "The C++ table of collectives (gloo_lite/collective_info.h).");
  m.def("_init_from_env", &init_from_environment, "timeout"_a = nb::none(),
        nb::rv_policy::take_ownership);
  m.def("_init", &init_explicit, "store"_a, "rank"_a, "size"_a, "timeout"_a = nb::none(),
        "prefix"_a = "", nb::rv_policy::take_ownership);

  nb::class_<PyContext> cls(m, "Context",
                            "One communicator: this process's rank among size ranks. Made by "
                            "gloo_lite.init(); usable as a context manager (close() at exit).");
  cls.def_prop_ro("rank", &PyContext::rank)
      .def_prop_ro("size", &PyContext::size)
      .def_prop_ro("closed", &PyContext::closed)
      .def("__repr__",
           [](const PyContext& c) { return "<gloo_lite.Context " + c.describe() + ">"; })
      .def("flight_record", &PyContext::flight_record, "The recent calls, for debugging.")
      .def("split", &PyContext::split, "color"_a, "key"_a = 0,
           "Sub-contexts like MPI_Comm_split: ranks with equal color, ordered by (key, rank). "
           "A negative color returns None.")
      .def("abort", &PyContext::abort, "reason"_a = "aborted from Python",
           "Fail this context: every peer's calls raise with this reason, naming this rank.")
      .def("close", &PyContext::close, "Release the context (idempotent).")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def(
          "__exit__", [](PyContext& c, nb::args) { c.close(); }, nb::arg("args"))
      .def("recv_any", &PyContext::recv_any, "a"_a, "srcs"_a, "tag"_a = 0, nb::kw_only(),
           "timeout"_a = nb::none(),
           "Receive into a from whichever of srcs sends first; returns that rank.");
  def_point_to_point(cls, "send", "isend", &PyContext::send, "dst", "Send a's bytes to rank dst.",
                     "Non-blocking send: returns a Work.");
  def_point_to_point(cls, "recv", "irecv", &PyContext::recv, "src",
                     "Receive into a from rank src; returns a.",
                     "Non-blocking receive into a: returns a Work.");

  def_collective(cls, "allreduce", &PyContext::allreduce,
                 "Reduce a over all ranks; in place, or into out.", "a"_a, "op"_a = "sum",
                 "out"_a = nb::none());
  def_collective(cls, "reduce", &PyContext::reduce,
                 "Reduce a onto root (in place there, or into out); None on other ranks.", "a"_a,
                 "root"_a = 0, "op"_a = "sum", "out"_a = nb::none());
  def_collective(cls, "reduce_scatter", &PyContext::reduce_scatter,
                 "a holds size blocks; rank r gets block r reduced (out, allocated when None).",
                 "a"_a, "op"_a = "sum", "out"_a = nb::none());
  def_collective(cls, "reduce_scatterv", &PyContext::reduce_scatterv,
                 "a holds sum(counts); rank r gets its counts[r] elements reduced.", "a"_a,
                 "counts"_a, "op"_a = "sum", "out"_a = nb::none());
  def_collective(cls, "allgather", &PyContext::allgather,
                 "Every rank's a, stacked: out has shape (size, *a.shape).", "a"_a,
                 "out"_a = nb::none());
  def_collective(cls, "allgatherv", &PyContext::allgatherv,
                 "Every rank's a, concatenated (1-D); counts[r] = rank r's a.size, exchanged "
                 "first when None.",
                 "a"_a, "counts"_a = nb::none(), "out"_a = nb::none());
  def_collective(cls, "gather", &PyContext::gather,
                 "Every rank's a stacked on root (shape (size, *a.shape)); None elsewhere.", "a"_a,
                 "root"_a = 0, "out"_a = nb::none());
  def_collective(cls, "gatherv", &PyContext::gatherv,
                 "Every rank's a concatenated on root; counts exchanged first when None.", "a"_a,
                 "counts"_a = nb::none(), "root"_a = 0, "out"_a = nb::none());
  def_collective(cls, "scatter", &PyContext::scatter,
                 "root's a holds size blocks; rank r gets block r (out). Elsewhere a is only a "
                 "shape template (or None, with out given).",
                 "a"_a.none(), "root"_a = 0, "out"_a = nb::none());
  def_collective(cls, "scatterv", &PyContext::scatterv,
                 "root's a holds sum(counts); rank r gets counts[r] elements.", "a"_a.none(),
                 "counts"_a, "root"_a = 0, "out"_a = nb::none());
  def_collective(cls, "broadcast", &PyContext::broadcast, "root's a to every rank's a, in place.",
                 "a"_a, "root"_a = 0);
  def_collective(cls, "alltoall", &PyContext::alltoall,
                 "a holds size blocks; block j goes to rank j, out's block i comes from rank i.",
                 "a"_a, "out"_a = nb::none());
  def_collective(cls, "alltoallv", &PyContext::alltoallv,
                 "send_counts[j] elements to rank j, recv_counts[j] from it, packed in rank "
                 "order.",
                 "a"_a, "send_counts"_a, "recv_counts"_a, "out"_a = nb::none());
  def_collective(cls, "barrier", &PyContext::barrier, "Wait until every rank has entered.");
}

}  // namespace gloo_lite::python
