// Errors between gloo_lite and torch. gloo_lite's failures reach Python as torch's distributed
// errors, keeping gloo_lite's message (which collective, which rank, what to do), by the
// error's kind() (torch_error, this binding's one table):
//   kStore           -> torch.distributed.DistStoreError
//   kInvalidArgument -> ValueError (raised by the call itself: nothing was started)
//   any other kind   -> torch.distributed.DistBackendError (timeouts, dead peers, mismatches,
//                       no usable GPU), as is any other exception
#pragma once

#include <exception>
#include <string>

#include "gloo_lite/base/error.h"

namespace gloo_lite::torch_backend {

// An exception's message without torch's C++ backtrace.
std::string message_of(const std::exception& error);
// The torch exception for a gloo_lite error of kind `kind` with `message`.
std::exception_ptr torch_error(ErrorKind kind, const std::string& message);
// The torch exception for a gloo_lite one (already-torch exceptions pass through).
std::exception_ptr to_torch(const std::exception_ptr& error);
// Rethrows the exception in flight as its torch form; for catch blocks of calls into gloo_lite.
[[noreturn]] void rethrow_as_torch();

// Runs a backend entry point's body (which validates before starting anything), leaving
// gloo_lite's errors (an InvalidArgument, a failed context) as torch's.
template <typename Body>
auto torch_errors(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    rethrow_as_torch();
  }
}

}  // namespace gloo_lite::torch_backend
