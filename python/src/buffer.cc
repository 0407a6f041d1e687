// Buffer-protocol operands: element types from buffer format strings, bfloat16 through
// ml_dtypes (numpy cannot export its custom dtypes as buffers: those are viewed as uint16).
#include "buffer.h"

#include <string>

namespace gloo_lite::python {
namespace {

const char* const kSupported =
    "int8, uint8, int32, uint32, int64, uint64, float16, float32, float64 "
    "(and bfloat16 with ml_dtypes installed)";

std::string prefix(const char* call, const char* argument) {
  return std::string(call) + ": " + argument + " ";
}

// The DataType of a struct-module format string with item size `size`, or false. Native and
// little-endian orders only: gloo_lite moves host-order bytes.
bool type_of_format(const char* format, Py_ssize_t size, DataType* type) {
  if (format == nullptr) format = "B";
  if (*format == '@' || *format == '=' || *format == '<') ++format;
  if (format[0] == '\0' || format[1] != '\0') return false;
  const bool is_signed = format[0] == 'b' || format[0] == 'i' || format[0] == 'l' ||
                         format[0] == 'q' || format[0] == 'n';
  const bool is_unsigned = format[0] == 'B' || format[0] == 'I' || format[0] == 'L' ||
                           format[0] == 'Q' || format[0] == 'N';
  if (is_signed || is_unsigned) {
    switch (size) {
      case 1:
        *type = is_signed ? DataType::kInt8 : DataType::kUint8;
        return true;
      case 4:
        *type = is_signed ? DataType::kInt32 : DataType::kUint32;
        return true;
      case 8:
        *type = is_signed ? DataType::kInt64 : DataType::kUint64;
        return true;
      default:
        return false;
    }
  }
  switch (format[0]) {
    case 'e':
      *type = DataType::kFloat16;
      return size == 2;
    case 'f':
      *type = DataType::kFloat32;
      return size == 4;
    case 'd':
      *type = DataType::kFloat64;
      return size == 8;
    default:
      return false;
  }
}

// ml_dtypes.bfloat16's dtype, or None when ml_dtypes is not installed (looked up once).
nb::handle bfloat16_dtype() {
  static PyObject* dtype = [] {
    try {
      nb::object numpy = nb::module_::import_("numpy");
      nb::object ml_dtypes = nb::module_::import_("ml_dtypes");
      return numpy.attr("dtype")(ml_dtypes.attr("bfloat16")).release().ptr();
    } catch (nb::python_error&) {
      PyErr_Clear();
      return nb::none().release().ptr();
    }
  }();
  return dtype;
}

// numpy arrays of bfloat16 refuse the buffer protocol: a uint16 view of them, or None.
nb::object bfloat16_view(nb::handle object) {
  if (!PyObject_HasAttrString(object.ptr(), "dtype")) return nb::none();
  nb::handle bf16 = bfloat16_dtype();
  if (bf16.is_none() || !object.attr("dtype").equal(bf16)) return nb::none();
  return object.attr("view")("uint16");
}

}  // namespace

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    view_ = other.view_;
    held_ = other.held_;
    other.held_ = false;
    count_ = other.count_;
    type_ = other.type_;
    shape_ = std::move(other.shape_);
    object_ = std::move(other.object_);
    argument_ = other.argument_;
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (held_) PyBuffer_Release(&view_);
  held_ = false;
}

Buffer Buffer::acquire(nb::handle object, const char* call, const char* argument, Access access) {
  Buffer buffer;
  buffer.object_ = nb::borrow(object);
  buffer.argument_ = argument;
  // Strides are asked for so that non-contiguous exporters still answer and the message can
  // say "not C-contiguous" rather than "not a buffer".
  const int flags = PyBUF_STRIDES | PyBUF_FORMAT;
  bool bfloat16 = false;
  if (PyObject_GetBuffer(object.ptr(), &buffer.view_, flags) != 0) {
    PyErr_Clear();
    nb::object view = bfloat16_view(object);
    if (view.is_none() || PyObject_GetBuffer(view.ptr(), &buffer.view_, flags) != 0) {
      PyErr_Clear();
      // An array of a dtype numpy exports no buffer for (datetime64, object, ...) is an array
      // all the same: name its dtype, not the protocol.
      nb::object dtype = nb::steal(PyObject_GetAttrString(object.ptr(), "dtype"));
      nb::object text = dtype.is_valid() ? nb::steal(PyObject_Str(dtype.ptr())) : nb::object();
      const char* dtype_name = text.is_valid() ? PyUnicode_AsUTF8(text.ptr()) : nullptr;
      PyErr_Clear();
      if (dtype_name != nullptr) {
        throw nb::type_error((prefix(call, argument) + "has dtype " + dtype_name +
                              ", which gloo_lite cannot reduce or move; supported: " + kSupported)
                                 .c_str());
      }
      throw nb::type_error((prefix(call, argument) +
                            "must support the buffer protocol (a numpy "
                            "array, bytearray, memoryview, ...) of " +
                            kSupported + "; got " + nb::inst_name(object).c_str())
                               .c_str());
    }
    bfloat16 = true;
  }
  buffer.held_ = true;
  const Py_buffer& view = buffer.view_;
  if (bfloat16) {
    buffer.type_ = DataType::kBFloat16;
  } else if (!type_of_format(view.format, view.itemsize, &buffer.type_)) {
    throw nb::type_error((prefix(call, argument) + "has elements of buffer format '" +
                          (view.format ? view.format : "B") + "' (" +
                          std::to_string(view.itemsize) +
                          " bytes), which gloo_lite cannot "
                          "reduce or move; supported: " +
                          kSupported)
                             .c_str());
  }
  if (!PyBuffer_IsContiguous(&view, 'C')) {
    throw nb::value_error(
        (prefix(call, argument) + "is not C-contiguous; pass numpy.ascontiguousarray(...) of it")
            .c_str());
  }
  if (access == Access::kWrite && view.readonly) {
    throw nb::value_error((prefix(call, argument) +
                           "is read-only but this call writes its result into it; pass a "
                           "writable array (or out=)")
                              .c_str());
  }
  buffer.count_ = static_cast<size_t>(view.len / view.itemsize);
  if (view.shape != nullptr) {
    buffer.shape_.assign(view.shape, view.shape + view.ndim);
  } else if (view.ndim != 0) {
    buffer.shape_ = {static_cast<Py_ssize_t>(buffer.count_)};  // a flat exporter
  }
  return buffer;
}

void require_same_type(const char* call, const Buffer& a, const Buffer& b) {
  if (a.type() == b.type()) return;
  throw nb::type_error((prefix(call, b.argument()) + "has dtype " + type_name(b.type()) +
                        ", expected " + type_name(a.type()) + " (the dtype of " + a.argument() +
                        ")")
                           .c_str());
}

void require_count(const char* call, const Buffer& b, size_t expected, const char* why) {
  if (b.count() == expected) return;
  throw nb::value_error((prefix(call, b.argument()) + "has " + std::to_string(b.count()) +
                         " elements, expected " + std::to_string(expected) + " (" + why + ")")
                            .c_str());
}

nb::object numpy_dtype(DataType type) {
  if (type == DataType::kBFloat16) {
    nb::handle bf16 = bfloat16_dtype();
    if (bf16.is_none()) throw nb::type_error("bfloat16 needs the ml_dtypes package");
    return nb::borrow(bf16);
  }
  return nb::module_::import_("numpy").attr("dtype")(type_name(type));
}

nb::object allocate(DataType type, const std::vector<Py_ssize_t>& shape) {
  nb::list dims;
  for (Py_ssize_t dim : shape) dims.append(dim);
  return nb::module_::import_("numpy").attr("empty")(nb::tuple(dims), numpy_dtype(type));
}

}  // namespace gloo_lite::python
