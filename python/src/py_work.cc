// gloo_lite.Work (see py_work.h).
#include "py_work.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "errors.h"
#include "interrupt.h"

namespace gloo_lite::python {

PyWork::PyWork(std::shared_ptr<Context> context, const char* what, Work work, Operands operands)
    : context_(std::move(context)),
      what_(what),
      work_(std::move(work)),
      operands_(std::move(operands)),
      result_(operands_.result) {}

PyWork::~PyWork() {
  if (context_->forked()) {
    // A forked child's copy of the parent's work: left alone, as the context is there (its
    // arrays are the child's copies, which nothing writes).
    new Work(std::move(work_));
  } else if (!work_.test()) {
    if (!nb::is_alive()) {
      // No GIL to give up at exit: leave the buffers held rather than free them under the work.
      for (Buffer& buffer : operands_.buffers) new Buffer(std::move(buffer));
      operands_.buffers.clear();
    } else {
      GilReleased release;
      try {
        work_.wait();  // bounded by the call's own deadline
      } catch (...) {
        // Its error had no one to go to: the caller dropped the handle.
      }
    }
  }
  release_operands();
}

void PyWork::release_operands() {
  operands_.buffers.clear();
  operands_.objects.clear();
}

bool PyWork::wait(std::optional<double> timeout) {
  const bool finished = wait_work(context_, work_, what_, timeout, &operands_.buffers);
  if (finished) release_operands();
  return finished;
}

nb::object PyWork::result(std::optional<double> timeout) {
  if (!wait(timeout)) {
    PyErr_SetString(PyExc_TimeoutError, (work_.describe() + " is still running").c_str());
    throw nb::python_error();
  }
  return result_;
}

bool PyWork::test() {
  context_->require_creating_process(what_);
  const bool finished = work_.test();
  if (finished) release_operands();
  return finished;
}

nb::object PyWork::exception() const { return python_exception(work_.error()); }

void bind_work(nb::module_& module) {
  nb::class_<PyWork>(module, "Work",
                     "The handle of a call started with async_op=True, isend or irecv. It keeps "
                     "the call's arrays alive until the call has finished.")
      .def("wait", &PyWork::wait, nb::arg("timeout") = nb::none(),
           "Wait until finished (True; raises the call's error if it failed) or until timeout "
           "seconds passed (False: still running). Releases the GIL; Ctrl-C interrupts it.")
      .def("result", &PyWork::result, nb::arg("timeout") = nb::none(),
           "Wait, then return the call's result (the output array).")
      .def("test", &PyWork::test, "True once finished; never blocks.")
      .def("is_completed", &PyWork::test, "Same as test().")
      .def("exception", &PyWork::exception,
           "The exception of a failed call; None while running or after success.")
      .def_prop_ro("algorithm", &PyWork::algorithm,
                   "What ran: 'ring', 'tree', ... ('p2p' for send/recv); '' before it started.")
      .def_prop_ro("source", &PyWork::source, "The rank a receive matched; -1 otherwise.")
      .def("__repr__",
           [](const PyWork& work) { return "<gloo_lite.Work " + work.describe() + ">"; });
}

}  // namespace gloo_lite::python
