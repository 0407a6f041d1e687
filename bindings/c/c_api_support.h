// Internal to the C ABI (gloo_lite/gloo_lite.h): the handle types behind the opaque pointers,
// the one wrapper that turns exceptions into result codes, and the argument conversions that
// every entry point shares. Each entry point is "check and convert the arguments, call the C++
// API" inside guarded(), so that no exception crosses the ABI and every failure leaves a
// message naming the function.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/gloo_lite.h"
#include "gloo_lite/work.h"

// The handles behind the opaque pointers. Each is kLive while it may be used; freeing it marks it
// kDestroyed and keeps it a while (c_api::retire), so that a call with a freed handle says so
// (c_api::live). The texts complete "<argument> ..." in that message.
struct gloo_lite_context {
  static constexpr uint64_t kLive = 0x6c6976652d637478;       // "live-ctx"
  static constexpr uint64_t kDestroyed = 0x646561642d637478;  // "dead-ctx"
  static constexpr const char* kDestroyedText =
      "is a destroyed context (gloo_lite_destroy was called on it): its handle may not be used "
      "again; create a new context";
  static constexpr const char* kForeignText =
      "is not a live gloo_lite context (a handle from gloo_lite_init, gloo_lite_init_from_env or "
      "gloo_lite_split)";
  uint64_t magic = kLive;
  std::shared_ptr<gloo_lite::Context> context;
  // What the handle holds goes when it is freed (the shell stays, marked).
  void release() { context.reset(); }
};

struct gloo_lite_work {
  static constexpr uint64_t kLive = 0x6c6976652d776b68;       // "live-wkh"
  static constexpr uint64_t kDestroyed = 0x646561642d776b68;  // "dead-wkh"
  static constexpr const char* kDestroyedText =
      "is a destroyed work handle (gloo_lite_work_free was called on it): it may not be used "
      "again; keep each handle until its last use and free it once";
  static constexpr const char* kForeignText =
      "is not a live gloo_lite work handle (one from a gloo_lite_i* call)";
  uint64_t magic = kLive;
  gloo_lite::Work work;
  // Strings handed out by gloo_lite_work_error/algorithm live here (documented lifetimes).
  std::string message;
  std::string algorithm;
  void release() {
    work = gloo_lite::Work();
    message = algorithm = std::string();
  }
};

namespace gloo_lite::c_api {

// The C ABI's outcome of each kind of gloo_lite error (gloo_lite/base/error.h): its one table.
gloo_lite_result_t result_of(ErrorKind kind) noexcept;
// The code and message of an exception: a gloo_lite error's by its kind (result_of), anything
// else internal. Never throws.
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
// `handle` (the argument `name`) when it is a live handle of its kind; InvalidArgument for NULL,
// a destroyed handle (a use after its free, or a second free) or a pointer that is no handle
// (as far as its first word tells: a freed handle's memory is kept marked, see retire). One
// compare per call, no lock.
template <typename Handle>
Handle& live(Handle* handle, const char* name) {
  Handle& h = required(handle, name);
  if (h.magic == Handle::kDestroyed) bad_argument(std::string(name) + " " + Handle::kDestroyedText);
  if (h.magic != Handle::kLive) bad_argument(std::string(name) + " " + Handle::kForeignText);
  return h;
}
// Frees a live handle: what it holds goes now, and the handle, marked destroyed, is kept for the
// next kRetired frees of its kind, so that a call that still uses it reads a marked handle
// (live() says "destroyed") where freed memory would give any message or a crash. A fixed
// number, so that a program that makes and frees handles in a loop does not grow; past it, a
// stale handle is freed memory again.
template <typename Handle>
void retire(std::unique_ptr<Handle> handle) {
  constexpr size_t kRetired = 64;
  static std::mutex mutex;
  static std::array<std::unique_ptr<Handle>, kRetired> retired;
  static size_t next = 0;
  handle->release();
  handle->magic = Handle::kDestroyed;
  std::lock_guard<std::mutex> lock(mutex);
  retired[next] = std::move(handle);  // frees the one retired kRetired frees ago
  next = (next + 1) % kRetired;
}
// The context of a live handle, the work of a live work handle (live()).
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
// A point-to-point tag: at most tags::kMaxUserTag (the upper half belongs to the collectives),
// checked here so that the message names the C argument.
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
