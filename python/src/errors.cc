// The one mapping from gloo_lite/base/error.h to gloo_lite/errors.py.
#include "errors.h"

#include <nanobind/stl/string.h>

#include <string>

#include "gloo_lite/base/error.h"

namespace gloo_lite::python {
namespace {

// Strong references kept for the interpreter's lifetime (classes are never unloaded).
struct Classes {
  PyObject* error;
  PyObject* timeout;
  PyObject* connection;
  PyObject* mismatch;
  PyObject* store;
  PyObject* invalid;
  PyObject* unavailable;
};
Classes classes{};

// The Python class of each kind of gloo_lite error: this binding's one table.
PyObject* class_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kTimeout:
      return classes.timeout;
    case ErrorKind::kConnection:
      return classes.connection;
    case ErrorKind::kMismatch:
      return classes.mismatch;
    case ErrorKind::kInvalidArgument:
      return classes.invalid;
    case ErrorKind::kStore:
      return classes.store;
    case ErrorKind::kUnavailable:
      return classes.unavailable;
    case ErrorKind::kOther:
      return classes.error;
  }
  return classes.error;  // not a value of the enum: a corrupt error object
}

// The class for the error `error` holds and its message: a gloo_lite error's by its kind, any
// other std::exception's RuntimeError.
PyObject* class_of(const std::exception_ptr& error, std::string* message) {
  try {
    std::rethrow_exception(error);
  } catch (const gloo_lite::Error& e) {
    *message = e.what();
    return class_of(e.kind());
  } catch (const std::exception& e) {
    *message = e.what();
    return PyExc_RuntimeError;
  }
}

}  // namespace

void register_errors() {
  nb::module_ errors = nb::module_::import_("gloo_lite.errors");
  auto get = [&](const char* name) -> PyObject* {
    return nb::object(errors.attr(name)).release().ptr();
  };
  classes = Classes{get("Error"),           get("TimeoutError"), get("ConnectionError"),
                    get("MismatchError"),   get("StoreError"),   get("InvalidArgument"),
                    get("UnavailableError")};
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const gloo_lite::Error&) {
      std::string message;
      PyObject* type = class_of(error, &message);
      PyErr_SetString(type, message.c_str());
    }
  });
}

nb::object python_exception(const std::exception_ptr& error) {
  if (!error) return nb::none();
  std::string message;
  nb::handle type = class_of(error, &message);
  return type(nb::str(message.c_str(), message.size()));
}

void bind_error_samples(nb::module_& m) {
  m.def(
      "_raise_error_sample",
      [](const std::string& name) { std::rethrow_exception(error_sample(name)); }, nb::arg("name"),
      "Raises the C++ error sample `name` (tests of the translation).");
  m.def(
      "_error_sample_object",
      [](const std::string& name) { return python_exception(error_sample(name)); }, nb::arg("name"),
      "Work.exception()'s object for the C++ error sample `name` (tests).");
}

}  // namespace gloo_lite::python
