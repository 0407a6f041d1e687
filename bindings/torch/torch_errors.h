// Errors between gloo_lite and torch. gloo_lite's failures reach Python as torch's distributed
// errors, keeping gloo_lite's message (which collective, which rank, what to do):
//   StoreError      -> torch.distributed.DistStoreError
//   InvalidArgument -> ValueError (raised by the call itself: nothing was started)
//   anything else   -> torch.distributed.DistBackendError (timeouts, dead peers, mismatches)
#pragma once

#include <exception>
#include <string>

#include "gloo_lite/base/error.h"

namespace gloo_lite::torch_backend {

// An exception's message without torch's C++ backtrace.
std::string message_of(const std::exception& error);
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
