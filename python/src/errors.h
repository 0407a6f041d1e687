// gloo_lite's C++ exceptions as the Python classes of gloo_lite.errors.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>

namespace gloo_lite::python {

namespace nb = nanobind;

// Imports gloo_lite.errors and registers the translator every bound function goes through:
// each gloo_lite error to the class of its kind() (TimeoutError -> gloo_lite.TimeoutError,
// cuda::Unavailable -> gloo_lite.UnavailableError, plain Error -> gloo_lite.Error, ...).
void register_errors();

// The Python exception object for a C++ error (what Work.exception() returns).
nb::object python_exception(const std::exception_ptr& error);

// The private _raise_error_sample(name) and _error_sample_object(name): the C++ error of each
// kind (gloo_lite::error_sample) through the translation above, for the tests.
void bind_error_samples(nb::module_& m);

}  // namespace gloo_lite::python
