// The error hierarchy of gloo_lite. C++ callers see exceptions; the C ABI turns them into result
// codes. Every message should say what failed, which ranks were involved and what to try.
#pragma once

#include <stdexcept>
#include <string>

namespace gloo_lite {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A deadline passed before the operation completed.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A peer vanished, reset the connection, aborted, or the network failed.
class ConnectionError : public Error {
 public:
  using Error::Error;
};

// Ranks disagree about an operation: sizes, data types, roots, collective sequence.
class MismatchError : public Error {
 public:
  using Error::Error;
};

// The caller passed something invalid (bad rank, null buffer, malformed URL, ...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// The rendezvous store failed or is unreachable.
class StoreError : public Error {
 public:
  using Error::Error;
};

}  // namespace gloo_lite
