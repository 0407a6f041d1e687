// gloo_lite's C++ exceptions as the Python classes of gloo_lite.errors.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>

namespace gloo_lite::python {

namespace nb = nanobind;

// Imports gloo_lite.errors and registers the translator every bound function goes through:
// TimeoutError -> gloo_lite.TimeoutError, ConnectionError -> gloo_lite.ConnectionError, ...
void register_errors();

// The Python exception object for a C++ error (what Work.exception() returns).
nb::object python_exception(const std::exception_ptr& error);

}  // namespace gloo_lite::python
