// gloo_lite.Work: the handle of a call made with async_op=True (or isend/irecv). It owns the
// call's buffers (Py_buffer views, so numpy will not resize them) and the objects the call
// uses until the work has finished, whatever the caller drops.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffer.h"
#include "gloo_lite/context.h"
#include "gloo_lite/work.h"

namespace gloo_lite::python {

namespace nb = nanobind;

// What a started call hands over: its buffers, other objects it uses (a custom op's callable),
// and what the call returns once finished.
struct Operands {
  std::vector<Buffer> buffers;
  std::vector<nb::object> objects;
  nb::object result = nb::none();
};

class PyWork {
 public:
  PyWork(std::shared_ptr<Context> context, const char* what, Work work, Operands operands);
  // Waits (GIL released) for work still running: its buffers must outlive it.
  ~PyWork();
  PyWork(const PyWork&) = delete;
  PyWork& operator=(const PyWork&) = delete;

  // True once finished (raising its error if it failed); false when `timeout` seconds passed
  // first (the work goes on). Releases the GIL; Ctrl-C interrupts it.
  bool wait(std::optional<double> timeout);
  // Waits like wait() and returns the call's result (the array); builtins.TimeoutError when
  // still running after `timeout`.
  nb::object result(std::optional<double> timeout);
  bool test();
  // The exception of a failed call; None while running or after success.
  nb::object exception() const;
  std::string algorithm() const { return work_.algorithm(); }
  int source() const { return work_.source(); }
  std::string describe() const { return work_.describe(); }

 private:
  void release_operands();

  std::shared_ptr<Context> context_;
  const char* what_;
  Work work_;
  Operands operands_;
  nb::object result_;
};

void bind_work(nb::module_& module);

}  // namespace gloo_lite::python
