// gloo_lite._core: the compiled half of the gloo_lite package (python/gloo_lite/ is the other).
#include <nanobind/nanobind.h>

#include "errors.h"
#include "interrupt.h"
#include "py_context.h"
#include "py_cuda.h"
#include "py_work.h"

NB_MODULE(_core, m) {
  m.doc() = "gloo_lite collectives on buffer-protocol objects (use the gloo_lite package)";
  gloo_lite::python::register_errors();
  gloo_lite::python::bind_error_samples(m);
  gloo_lite::python::init_interrupts();
  gloo_lite::python::bind_work(m);
  gloo_lite::python::bind_context(m);
  gloo_lite::python::bind_cuda(m);
}
