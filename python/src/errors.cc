// The one mapping from gloo_lite/base/error.h to gloo_lite/errors.py.
#include "errors.h"

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
};
Classes classes{};

// The class for the error `error` holds and its message; most derived C++ type first.
PyObject* class_of(const std::exception_ptr& error, std::string* message) {
  try {
    std::rethrow_exception(error);
  } catch (const gloo_lite::TimeoutError& e) {
    *message = e.what();
    return classes.timeout;
  } catch (const gloo_lite::ConnectionError& e) {
    *message = e.what();
    return classes.connection;
  } catch (const gloo_lite::MismatchError& e) {
    *message = e.what();
    return classes.mismatch;
  } catch (const gloo_lite::StoreError& e) {
    *message = e.what();
    return classes.store;
  } catch (const gloo_lite::InvalidArgument& e) {
    *message = e.what();
    return classes.invalid;
  } catch (const gloo_lite::Error& e) {
    *message = e.what();
    return classes.error;
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
  classes = Classes{get("Error"),         get("TimeoutError"), get("ConnectionError"),
                    get("MismatchError"), get("StoreError"),   get("InvalidArgument")};
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

}  // namespace gloo_lite::python
