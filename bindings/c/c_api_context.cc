// The C ABI's library-wide functions (version, errors, types) and contexts: creation from the
// environment or from a store URL, split, abort, destroy.
#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "bindings/c/c_api_support.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/knobs.h"
#include "rendezvous/stores.h"

// The header's version macros must be the project's (CMakeLists.txt passes its version in).
static_assert(GLOO_LITE_VERSION_MAJOR == GLOO_LITE_PROJECT_VERSION_MAJOR &&
                  GLOO_LITE_VERSION_MINOR == GLOO_LITE_PROJECT_VERSION_MINOR &&
                  GLOO_LITE_VERSION_PATCH == GLOO_LITE_PROJECT_VERSION_PATCH &&
                  std::string_view(GLOO_LITE_VERSION_STRING) == GLOO_LITE_PROJECT_VERSION,
              "gloo_lite/gloo_lite.h's GLOO_LITE_VERSION_* differ from project(VERSION) in "
              "CMakeLists.txt: update the header");

using namespace gloo_lite;
using namespace gloo_lite::c_api;

namespace {

// Hands a new context out through `out`, which the caller checked.
void hand_out(std::shared_ptr<Context> context, gloo_lite_context_t** out) {
  auto handle = std::make_unique<gloo_lite_context>();
  handle->context = std::move(context);
  *out = handle.release();
}

}  // namespace

extern "C" {

const char* gloo_lite_version(void) { return GLOO_LITE_PROJECT_VERSION; }

const char* gloo_lite_last_error(void) { return last_error_message(); }

const char* gloo_lite_result_name(gloo_lite_result_t result) {
  switch (result) {
    case GLOO_LITE_SUCCESS:
      return "success";
    case GLOO_LITE_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case GLOO_LITE_ERR_TIMEOUT:
      return "timeout";
    case GLOO_LITE_ERR_CONNECTION:
      return "connection";
    case GLOO_LITE_ERR_MISMATCH:
      return "mismatch";
    case GLOO_LITE_ERR_STORE:
      return "store";
    case GLOO_LITE_ERR_INTERNAL:
      return "internal";
    case GLOO_LITE_IN_PROGRESS:
      return "in progress";
    case GLOO_LITE_ERR_UNAVAILABLE:
      return "unavailable";
  }
  return "unknown result";
}

gloo_lite_result_t gloo_lite_type_size(gloo_lite_datatype_t type, size_t* size) {
  return guarded(__func__, [&] {
    DataType t = type_of(type);
    required(size, "size") = element_size(t);
  });
}

gloo_lite_result_t gloo_lite_init_from_env(int64_t timeout_ms, gloo_lite_context_t** context) {
  if (context != nullptr) *context = nullptr;
  return guarded(__func__, [&] {
    required(context, "context");
    ContextOptions options;
    options.timeout = timeout_of(timeout_ms, "timeout_ms");
    hand_out(init_from_env(options), context);
  });
}

gloo_lite_result_t gloo_lite_init(const char* store_url, const char* prefix, int rank, int size,
                                  int64_t timeout_ms, gloo_lite_context_t** context) {
  if (context != nullptr) *context = nullptr;
  return guarded(__func__, [&] {
    required(context, "context");
    required(store_url, "store_url");
    if (size < 1) bad_argument("size is " + std::to_string(size) + "; it must be at least 1");
    if (rank < 0 || rank >= size) {
      bad_argument("rank is " + std::to_string(rank) + "; it must be in 0.." +
                   std::to_string(size - 1) + " because size is " + std::to_string(size));
    }
    ContextOptions options;
    options.timeout = timeout_of(timeout_ms, "timeout_ms");
    log_set_rank(rank);
    validate_knobs();  // a bad knob fails here, naming itself, not later as a time-out
    if (options.timeout.count() == 0) options.timeout = knob_ms("GLOO_LITE_TIMEOUT_MS");
    // Store, device and connection all within the one timeout, as init_from_env does.
    const Deadline deadline = Deadline::after(options.timeout);
    std::shared_ptr<Store> store = open_store(store_url, deadline);
    if (prefix != nullptr && *prefix != '\0') store = make_prefix_store(std::move(store), prefix);
    hand_out(Context::create(std::move(store), rank, size, create_device_from_env(), options),
             context);
  });
}

gloo_lite_result_t gloo_lite_destroy(gloo_lite_context_t* context) {
  return guarded(__func__, [&] {
    if (context == nullptr) return;  // like free(NULL)
    live(context, "context");        // a destroyed handle is refused, not freed twice
    retire(std::unique_ptr<gloo_lite_context>(context));  // the context goes now
  });
}

gloo_lite_result_t gloo_lite_context_rank(const gloo_lite_context_t* context, int* rank) {
  return guarded(__func__, [&] { required(rank, "rank") = context_of(context).rank(); });
}

gloo_lite_result_t gloo_lite_context_size(const gloo_lite_context_t* context, int* size) {
  return guarded(__func__, [&] { required(size, "size") = context_of(context).size(); });
}

gloo_lite_result_t gloo_lite_split(gloo_lite_context_t* context, int color, int key,
                                   gloo_lite_context_t** new_context) {
  if (new_context != nullptr) *new_context = nullptr;
  return guarded(__func__, [&] {
    Context& parent = context_of(context);
    required(new_context, "new_context");
    std::shared_ptr<Context> child = parent.split(color, key);
    if (child) hand_out(std::move(child), new_context);
  });
}

gloo_lite_result_t gloo_lite_abort(gloo_lite_context_t* context, const char* reason) {
  return guarded(__func__, [&] {
    context_of(context).abort(reason != nullptr && *reason != '\0'
                                  ? reason
                                  : "the application aborted the context (gloo_lite_abort)");
  });
}

}  // extern "C"
