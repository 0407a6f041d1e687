#include "bindings/torch/torch_errors.h"

#include <c10/util/Exception.h>

#include "gloo_lite/base/error.h"

namespace gloo_lite::torch_backend {

std::string message_of(const std::exception& error) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) {
    return torch_error->what_without_backtrace();
  }
  return error.what();
}

std::exception_ptr torch_error(ErrorKind kind, const std::string& message) {
  const c10::SourceLocation here{__func__, __FILE__, __LINE__};
  switch (kind) {
    case ErrorKind::kStore:
      return std::make_exception_ptr(c10::DistStoreError(here, message));
    case ErrorKind::kInvalidArgument:
      return std::make_exception_ptr(c10::ValueError(here, message));
    case ErrorKind::kTimeout:
    case ErrorKind::kConnection:
    case ErrorKind::kMismatch:
    case ErrorKind::kUnavailable:
    case ErrorKind::kOther:
      break;
  }
  return std::make_exception_ptr(c10::DistBackendError(here, message));
}

std::exception_ptr to_torch(const std::exception_ptr& error) {
  if (!error) return nullptr;
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error&) {
    return error;
  } catch (const Error& e) {
    return torch_error(e.kind(), e.what());
  } catch (const std::exception& e) {
    return torch_error(ErrorKind::kOther, e.what());
  } catch (...) {
    return torch_error(ErrorKind::kOther, "gloo_lite: a collective failed with an unknown error");
  }
}

void rethrow_as_torch() { std::rethrow_exception(to_torch(std::current_exception())); }

}  // namespace gloo_lite::torch_backend
