// The error hierarchy of gloo_lite. C++ callers see exceptions; the bindings turn them into their
// own outcomes (the C ABI's result codes, gloo_lite.errors' classes, torch's errors) by kind().
// Every message should say what failed, which ranks were involved and what to try.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace gloo_lite {

// What kind of failure an error reports: the one classification each binding maps, in one table
// of its own, to its outcome. Each class below names its kind once; a binding catches Error and
// switches on kind(), so that a new kind is a compile error (-Wswitch) in every table that
// misses it instead of a silent fall into "internal".
enum class ErrorKind {
  kOther,            // a failure of no narrower kind (Error itself)
  kTimeout,          // TimeoutError
  kConnection,       // ConnectionError
  kMismatch,         // MismatchError
  kInvalidArgument,  // InvalidArgument
  kStore,            // StoreError
  kUnavailable,      // UnavailableError
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  virtual ErrorKind kind() const noexcept { return ErrorKind::kOther; }
};

// A deadline passed before the operation completed.
class TimeoutError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kTimeout; }
};

// A peer vanished, reset the connection, aborted, or the network failed.
class ConnectionError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kConnection; }
};

// Ranks disagree about an operation: sizes, data types, roots, collective sequence.
class MismatchError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kMismatch; }
};

// The caller passed something invalid (bad rank, null buffer, malformed URL, ...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kInvalidArgument; }
};

// The rendezvous store failed or is unreachable.
class StoreError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kStore; }
};

// A part that cannot run here: the CUDA collectives without CUDA in the build or without a
// usable GPU (cuda::Unavailable).
class UnavailableError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kUnavailable; }
};

// Every kind, and each one's name ("timeout", "invalid_argument", ...).
inline constexpr ErrorKind kErrorKinds[] = {
    ErrorKind::kOther,           ErrorKind::kTimeout, ErrorKind::kConnection, ErrorKind::kMismatch,
    ErrorKind::kInvalidArgument, ErrorKind::kStore,   ErrorKind::kUnavailable};
constexpr const char* name_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kOther:
      return "other";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kConnection:
      return "connection";
    case ErrorKind::kMismatch:
      return "mismatch";
    case ErrorKind::kInvalidArgument:
      return "invalid_argument";
    case ErrorKind::kStore:
      return "store";
    case ErrorKind::kUnavailable:
      return "unavailable";
  }
  return "?";
}

// An error of `kind` as that kind's class, carrying `message` (Error itself for kOther): what
// the bindings' tests throw through each binding's table.
inline std::exception_ptr error_of_kind(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kTimeout:
      return std::make_exception_ptr(TimeoutError(message));
    case ErrorKind::kConnection:
      return std::make_exception_ptr(ConnectionError(message));
    case ErrorKind::kMismatch:
      return std::make_exception_ptr(MismatchError(message));
    case ErrorKind::kInvalidArgument:
      return std::make_exception_ptr(InvalidArgument(message));
    case ErrorKind::kStore:
      return std::make_exception_ptr(StoreError(message));
    case ErrorKind::kUnavailable:
      return std::make_exception_ptr(UnavailableError(message));
    case ErrorKind::kOther:
      break;
  }
  return std::make_exception_ptr(Error(message));
}

// The error of the kind named `name` (name_of) carrying "sample <name>"; InvalidArgument naming
// the kinds for any other name. The bindings' private test entry points throw it.
inline std::exception_ptr error_sample(const std::string& name) {
  std::string names;
  for (ErrorKind kind : kErrorKinds) {
    if (name == name_of(kind)) return error_of_kind(kind, "sample " + name);
    names += std::string(names.empty() ? "" : ", ") + name_of(kind);
  }
  return std::make_exception_ptr(
      InvalidArgument("no error kind named '" + name + "'; known: " + names));
}

}  // namespace gloo_lite
