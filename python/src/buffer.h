// Buffer-protocol objects as collective operands. Everything a call needs to know about its
// arrays (element type, C-contiguity, writability, element counts) is checked here, with the GIL
// held and before any traffic, so that a bad argument raises ValueError or TypeError naming the
// argument instead of failing, or hanging, on the wire.
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>

#include <cstddef>
#include <vector>

#include "gloo_lite/types.h"

namespace gloo_lite::python {

namespace nb = nanobind;

enum class Access { kRead, kWrite };

// One acquired Py_buffer (released on destruction, which must happen with the GIL held) and the
// object it came from (what a call returns when it works in place).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  // Acquires `object`'s memory for `call` (e.g. "allreduce"), where it is argument `argument`.
  // TypeError: not a buffer, or an element type gloo_lite has no DataType for. ValueError: not
  // C-contiguous, or read-only where `access` is kWrite.
  static Buffer acquire(nb::handle object, const char* call, const char* argument, Access access);

  void* data() const { return view_.buf; }
  size_t count() const { return count_; }
  size_t bytes() const { return static_cast<size_t>(view_.len); }
  DataType type() const { return type_; }
  const std::vector<Py_ssize_t>& shape() const { return shape_; }
  const nb::object& object() const { return object_; }
  const char* argument() const { return argument_; }

 private:
  void release();

  Py_buffer view_{};
  bool held_ = false;
  size_t count_ = 0;
  DataType type_ = DataType::kUint8;
  std::vector<Py_ssize_t> shape_;
  nb::object object_;
  const char* argument_ = "";
};

// TypeError unless `b` has `a`'s element type.
void require_same_type(const char* call, const Buffer& a, const Buffer& b);
// ValueError unless `b` holds `expected` elements; `why` says where the number comes from
// ("size * a.size", "sum(counts)").
void require_count(const char* call, const Buffer& b, size_t expected, const char* why);

// The numpy dtype of a DataType (bfloat16: ml_dtypes'), for allocated outputs and custom ops.
nb::object numpy_dtype(DataType type);
// numpy.empty(shape, dtype).
nb::object allocate(DataType type, const std::vector<Py_ssize_t>& shape);

}  // namespace gloo_lite::python
