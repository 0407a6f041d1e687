// Internal to the C ABI (gloo_lite/gloo_lite.h): the handle types behind the opaque pointers,
// the one wrapper that turns exceptions into result codes, and the argument conversions that
// every entry point shares. Each entry point is "check and convert the arguments, call the C++
// API" inside guarded(), so that no exception crosses the ABI and every failure leaves a
// message naming the function.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/gloo_lite.h"
#include "gloo_lite/work.h"

struct gloo_lite_context {
  // kLive while the handle may be used. gloo_lite_destroy marks it kDestroyed and keeps it a
  // while (c_api_context.cc), so that a call with a destroyed handle says so.
  static constexpr uint64_t kLive = 0x6c6976652d637478;       // "live-ctx"
  static constexpr uint64_t kDestroyed = 0x646561642d637478;  // "dead-ctx"
  uint64_t magic = kLive;
  std::shared_ptr<gloo_lite::Context> context;
};

struct gloo_lite_work {
  gloo_lite::Work work;
  // Strings handed out by gloo_lite_work_error/algorithm live here (documented lifetimes).
  std::string message;
  std::string algorithm;
};

namespace gloo_lite::c_api {

// The code and message of an exception (the C++ error hierarchy of gloo_lite/base/error.h
// mapped to result codes; anything else is internal). Never throws.
gloo_lite_result_t classify(const std::exception_ptr& error, std::string* message) noexcept;

// The thread's last-error message (gloo_lite_last_error).
const char* last_error_message() noexcept;
void clear_last_error() noexcept;
gloo_lite_result_t record_failure(const char* function, const std::exception_ptr& error) noexcept;

// Runs `body` (returning void, meaning success, or a result code), maps any exception to its
// code and records "function: message" as the thread's last error.
template <typename Body>
gloo_lite_result_t guarded(const char* function, Body&& body) noexcept {
  gloo_lite_result_t result = GLOO_LITE_SUCCESS;
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
    } else {
      result = body();
    }
  } catch (...) {
    return record_failure(function, std::current_exception());
  }
  clear_last_error();
  return result;
}

// Argument checks: each throws InvalidArgument naming the argument (guarded() adds the
// function's name).
[[noreturn]] void bad_argument(const std::string& what);
template <typename T>
T& required(T* pointer, const char* name) {
  if (pointer == nullptr) bad_argument(std::string(name) + " is NULL");
  return *pointer;
}
// The context of a live handle; InvalidArgument for NULL, a destroyed handle (a use after
// gloo_lite_destroy, or a second destroy) or a pointer that is no handle.
Context& context_of(const gloo_lite_context_t* handle);
Work& work_of(gloo_lite_work_t* handle);
DataType type_of(gloo_lite_datatype_t type);
ReduceOp op_of(gloo_lite_op_t op);
// `options` (NULL: defaults) as C++ options; `op` says whether the call needs options->custom.
CollectiveOptions options_of(const gloo_lite_options_t* options, gloo_lite_op_t op = GLOO_LITE_SUM);
// A C array of one count per rank of `context`.
std::vector<size_t> counts_of(const gloo_lite_context_t* context, const size_t* counts,
                              const char* name);
// A timeout argument in milliseconds: 0 is the context's, negative is invalid.
std::chrono::milliseconds timeout_of(int64_t timeout_ms, const char* name);
// A point-to-point tag: below 2^63 (the upper half belongs to the collectives).
uint64_t p2p_tag_of(uint64_t tag);

// The two forms of every operation, from one `start(blocking, ...)`: blocking runs the C++
// blocking form in the calling thread, non-blocking starts the C++ non-blocking form and hands
// out a work handle. The out-pointer is checked (and
// the handle allocated) before anything starts, so that a started operation always has one.
template <typename Start, typename... Args>
gloo_lite_result_t run_blocking(const char* function, Start start, Args... args) noexcept {
  return guarded(function, [&] { start(/*blocking=*/true, args...); });
}
template <typename Start, typename... Args>
gloo_lite_result_t run_nonblocking(const char* function, gloo_lite_work_t** work, Start start,
                                   Args... args) noexcept {
  if (work != nullptr) *work = nullptr;
  return guarded(function, [&] {
    required(work, "work");
    auto handle = std::make_unique<gloo_lite_work>();
    handle->work = start(/*blocking=*/false, args...);
    *work = handle.release();
  });
}

}  // namespace gloo_lite::c_api
