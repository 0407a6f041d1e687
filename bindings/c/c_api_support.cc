// The exception-to-code mapping and the argument conversions of the C ABI (c_api_support.h).
#include "bindings/c/c_api_support.h"

#include <new>

#include "gloo_lite/base/error.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite::c_api {
namespace {

thread_local std::string last_error;

// Assigns without letting an allocation failure escape (the message is then cut short).
void assign(std::string* target, const char* text) noexcept {
  try {
    *target = text;
  } catch (...) {
    target->clear();
  }
}

}  // namespace

// The C enums are the C++ enums' values in the same order; conversions are casts after a
// range check.
static_assert(static_cast<int>(DataType::kInt8) == GLOO_LITE_INT8 &&
              static_cast<int>(DataType::kUint8) == GLOO_LITE_UINT8 &&
              static_cast<int>(DataType::kInt32) == GLOO_LITE_INT32 &&
              static_cast<int>(DataType::kUint32) == GLOO_LITE_UINT32 &&
              static_cast<int>(DataType::kInt64) == GLOO_LITE_INT64 &&
              static_cast<int>(DataType::kUint64) == GLOO_LITE_UINT64 &&
              static_cast<int>(DataType::kFloat16) == GLOO_LITE_FLOAT16 &&
              static_cast<int>(DataType::kBFloat16) == GLOO_LITE_BFLOAT16 &&
              static_cast<int>(DataType::kFloat32) == GLOO_LITE_FLOAT32 &&
              static_cast<int>(DataType::kFloat64) == GLOO_LITE_FLOAT64);
static_assert(static_cast<int>(ReduceOp::kSum) == GLOO_LITE_SUM &&
              static_cast<int>(ReduceOp::kProd) == GLOO_LITE_PROD &&
              static_cast<int>(ReduceOp::kMin) == GLOO_LITE_MIN &&
              static_cast<int>(ReduceOp::kMax) == GLOO_LITE_MAX &&
              static_cast<int>(ReduceOp::kAvg) == GLOO_LITE_AVG &&
              static_cast<int>(ReduceOp::kCustom) == GLOO_LITE_CUSTOM &&
              static_cast<int>(ReduceOp::kBand) == GLOO_LITE_BAND &&
              static_cast<int>(ReduceOp::kBor) == GLOO_LITE_BOR &&
              static_cast<int>(ReduceOp::kBxor) == GLOO_LITE_BXOR);

gloo_lite_result_t result_of(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kTimeout:
      return GLOO_LITE_ERR_TIMEOUT;
    case ErrorKind::kConnection:
      return GLOO_LITE_ERR_CONNECTION;
    case ErrorKind::kMismatch:
      return GLOO_LITE_ERR_MISMATCH;
    case ErrorKind::kInvalidArgument:
      return GLOO_LITE_ERR_INVALID_ARGUMENT;
    case ErrorKind::kStore:
      return GLOO_LITE_ERR_STORE;
    case ErrorKind::kUnavailable:
      return GLOO_LITE_ERR_UNAVAILABLE;
    case ErrorKind::kOther:
      return GLOO_LITE_ERR_INTERNAL;
  }
  return GLOO_LITE_ERR_INTERNAL;  // not a value of the enum: a corrupt error object
}

gloo_lite_result_t classify(const std::exception_ptr& error, std::string* message) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    assign(message, e.what());
    return result_of(e.kind());
  } catch (const std::bad_alloc&) {
    assign(message, "out of memory");
  } catch (const std::exception& e) {
    assign(message, e.what());
  } catch (...) {
    assign(message, "an exception that is not a std::exception (a bug: please report it)");
  }
  return GLOO_LITE_ERR_INTERNAL;
}

const char* last_error_message() noexcept { return last_error.c_str(); }

void clear_last_error() noexcept { last_error.clear(); }

gloo_lite_result_t record_failure(const char* function, const std::exception_ptr& error) noexcept {
  std::string message;
  gloo_lite_result_t result = classify(error, &message);
  try {
    last_error = std::string(function) + ": " + message;
  } catch (...) {
    assign(&last_error, function);
  }
  return result;
}

void bad_argument(const std::string& what) { throw InvalidArgument(what); }

Context& context_of(const gloo_lite_context_t* handle) { return *live(handle, "context").context; }

Work& work_of(gloo_lite_work_t* handle) { return live(handle, "work").work; }

DataType type_of(gloo_lite_datatype_t type) {
  const int value = type;
  if (value < GLOO_LITE_INT8 || value > GLOO_LITE_FLOAT64) {
    bad_argument("type " + std::to_string(value) +
                 " is not a gloo_lite_datatype_t (GLOO_LITE_INT8 .. GLOO_LITE_FLOAT64)");
  }
  return static_cast<DataType>(type);
}

ReduceOp op_of(gloo_lite_op_t op) {
  const int value = op;
  if (value < GLOO_LITE_SUM || value > GLOO_LITE_BXOR) {
    bad_argument("op " + std::to_string(value) +
                 " is not a gloo_lite_op_t (GLOO_LITE_SUM .. GLOO_LITE_BXOR)");
  }
  return static_cast<ReduceOp>(op);
}

CollectiveOptions options_of(const gloo_lite_options_t* options, gloo_lite_op_t op) {
  CollectiveOptions result;
  if (options == nullptr) {
    if (op == GLOO_LITE_CUSTOM) bad_argument("op is GLOO_LITE_CUSTOM but options is NULL");
    return result;
  }
  if (options->algorithm != nullptr && *options->algorithm != '\0') {
    result.algorithm = options->algorithm;
  }
  if (options->timeout_ms < 0) {
    bad_argument("options->timeout_ms is " + std::to_string(options->timeout_ms) +
                 "; use 0 for the context's timeout or a positive number of milliseconds");
  }
  result.timeout = std::chrono::milliseconds(options->timeout_ms);
  result.tag = options->tag;
  result.check = options->check != 0;
  if (op == GLOO_LITE_CUSTOM) {
    if (options->custom == nullptr) {
      bad_argument("op is GLOO_LITE_CUSTOM but options->custom is NULL");
    }
    gloo_lite_reduce_fn custom = options->custom;
    void* user_data = options->user_data;
    result.custom = [custom, user_data](void* inout, const void* in, size_t count) {
      custom(inout, in, count, user_data);
    };
  }
  return result;
}

std::vector<size_t> counts_of(const gloo_lite_context_t* context, const size_t* counts,
                              const char* name) {
  Context& c = context_of(context);
  required(counts, name);
  return std::vector<size_t>(counts, counts + c.size());
}

std::chrono::milliseconds timeout_of(int64_t timeout_ms, const char* name) {
  if (timeout_ms < 0) {
    bad_argument(std::string(name) + " is " + std::to_string(timeout_ms) +
                 "; use 0 for the context's timeout or a positive number of milliseconds");
  }
  return std::chrono::milliseconds(timeout_ms);
}

uint64_t p2p_tag_of(uint64_t tag) {
  if (tag > tags::kMaxUserTag) {
    bad_argument("tag " + std::to_string(tag) +
                 " is not below 2^63 (the upper half of the tag space belongs to the "
                 "collectives)");
  }
  return tag;
}

}  // namespace gloo_lite::c_api
