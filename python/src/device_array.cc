// Device-array operands (device_array.h): __cuda_array_interface__ (version 2 and 3) read from
// its dict, DLPack through nanobind's ndarray import.
#include "device_array.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <string>

namespace gloo_lite::python {
namespace {

std::string where(const char* call, const char* argument) {
  return std::string("CudaCommunicator.") + call + ": " + argument;
}

[[noreturn]] void type_error(const std::string& message) { throw nb::type_error(message.c_str()); }
[[noreturn]] void value_error(const std::string& message) {
  throw nb::value_error(message.c_str());
}

const char kHostHint[] =
    "; CudaCommunicator takes device arrays (__cuda_array_interface__, or DLPack on a CUDA "
    "device): use gloo_lite.Context for host memory";

// The DataType of a __cuda_array_interface__ typestr ("<f4", "|u1", ...), or false.
bool type_of_typestr(const std::string& typestr, DataType* type) {
  if (typestr.size() != 3) return false;
  const char order = typestr[0], kind = typestr[1], size = typestr[2];
  if (order == '>' && size != '1') return false;  // big-endian: not this machine's
  if (order != '<' && order != '|' && order != '=' && order != '>') return false;
  struct Entry {
    char kind, size;
    DataType type;
  };
  static constexpr Entry kTable[] = {
      {'i', '1', DataType::kInt8},    {'u', '1', DataType::kUint8},
      {'i', '4', DataType::kInt32},   {'u', '4', DataType::kUint32},
      {'i', '8', DataType::kInt64},   {'u', '8', DataType::kUint64},
      {'f', '2', DataType::kFloat16}, {'f', '4', DataType::kFloat32},
      {'f', '8', DataType::kFloat64},
  };
  for (const Entry& entry : kTable) {
    if (entry.kind == kind && entry.size == size) {
      *type = entry.type;
      return true;
    }
  }
  return false;
}

// The DataType of a DLPack dtype, or false.
bool type_of_dlpack(nb::dlpack::dtype dtype, DataType* type) {
  if (dtype.lanes != 1) return false;
  const auto code = static_cast<nb::dlpack::dtype_code>(dtype.code);
  struct Entry {
    nb::dlpack::dtype_code code;
    uint8_t bits;
    DataType type;
  };
  using Code = nb::dlpack::dtype_code;
  static constexpr Entry kTable[] = {
      {Code::Int, 8, DataType::kInt8},       {Code::UInt, 8, DataType::kUint8},
      {Code::Int, 32, DataType::kInt32},     {Code::UInt, 32, DataType::kUint32},
      {Code::Int, 64, DataType::kInt64},     {Code::UInt, 64, DataType::kUint64},
      {Code::Float, 16, DataType::kFloat16}, {Code::Bfloat, 16, DataType::kBFloat16},
      {Code::Float, 32, DataType::kFloat32}, {Code::Float, 64, DataType::kFloat64},
  };
  for (const Entry& entry : kTable) {
    if (entry.code == code && entry.bits == dtype.bits) {
      *type = entry.type;
      return true;
    }
  }
  return false;
}

// Whether `strides` (in bytes, or in elements with item 1) describe a C-contiguous `shape`.
// Dimensions of extent 1 may have any stride (as numpy and torch say).
bool c_contiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                  int64_t item) {
  int64_t expected = item;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

size_t count_of(const std::vector<int64_t>& shape) {
  size_t count = 1;
  for (int64_t extent : shape) count *= static_cast<size_t>(extent);
  return count;
}

DeviceArray from_interface(nb::handle object, const char* call, const char* argument,
                           bool writable) {
  nb::object interface = object.attr("__cuda_array_interface__");
  if (!nb::isinstance<nb::dict>(interface)) {
    type_error(where(call, argument) + ": __cuda_array_interface__ is not a dict");
  }
  nb::dict dict = nb::borrow<nb::dict>(interface);
  if (dict.contains("mask") && !dict["mask"].is_none()) {
    value_error(where(call, argument) +
                ": masked arrays (__cuda_array_interface__ mask) are "
                "not supported");
  }
  DeviceArray array;
  array.argument = argument;
  array.owner = nb::borrow(object);
  const std::string typestr = nb::cast<std::string>(dict["typestr"]);
  if (!type_of_typestr(typestr, &array.type)) {
    type_error(where(call, argument) + " has element type '" + typestr +
               "', which gloo_lite has no type for (int8/uint8/int32/uint32/int64/uint64/"
               "float16/float32/float64; bfloat16 only through DLPack)");
  }
  for (nb::handle extent : nb::borrow<nb::tuple>(dict["shape"])) {
    array.shape.push_back(nb::cast<int64_t>(extent));
  }
  if (dict.contains("strides") && !dict["strides"].is_none()) {
    std::vector<int64_t> strides;
    for (nb::handle stride : nb::borrow<nb::tuple>(dict["strides"])) {
      strides.push_back(nb::cast<int64_t>(stride));
    }
    if (!c_contiguous(array.shape, strides, static_cast<int64_t>(element_size(array.type)))) {
      value_error(where(call, argument) +
                  " is not C-contiguous (make it contiguous first, e.g. .contiguous() or "
                  "cupy.ascontiguousarray)");
    }
  }
  nb::tuple data = nb::borrow<nb::tuple>(dict["data"]);
  array.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(data[0]));
  if (writable && nb::cast<bool>(data[1])) {
    value_error(where(call, argument) + " is read-only, and this call writes it");
  }
  array.count = count_of(array.shape);
  return array;
}

DeviceArray from_dlpack(nb::handle object, const char* call, const char* argument,
                        nb::handle stream) {
  // The export is called here rather than by nanobind's import, which passes no stream.
  nb::object capsule;
  try {
    capsule = stream.is_none() ? object.attr("__dlpack__")()
                               : object.attr("__dlpack__")(nb::arg("stream") = stream);
  } catch (nb::python_error& e) {
    type_error(where(call, argument) + ": its __dlpack__(stream=" +
               nb::cast<std::string>(nb::repr(stream)) + ") export failed: " + e.what());
  }
  nb::ndarray<> tensor;
  if (!nb::try_cast(capsule, tensor)) {
    type_error(where(call, argument) + ": its __dlpack__ export failed");
  }
  if (tensor.device_type() != nb::device::cuda::value) {
    type_error(where(call, argument) + " is on DLPack device type " +
               std::to_string(tensor.device_type()) + ", not kDLCUDA (" +
               std::to_string(nb::device::cuda::value) + ")" + kHostHint);
  }
  DeviceArray array;
  array.argument = argument;
  array.owner = nb::borrow(object);  // owns the memory; the DLPack tensor only views it
  array.device = tensor.device_id();
  if (!type_of_dlpack(tensor.dtype(), &array.type)) {
    type_error(where(call, argument) + " has a DLPack element type (code " +
               std::to_string(tensor.dtype().code) + ", " + std::to_string(tensor.dtype().bits) +
               " bits) that gloo_lite has no type for");
  }
  std::vector<int64_t> strides;
  for (size_t i = 0; i < tensor.ndim(); ++i) {
    array.shape.push_back(static_cast<int64_t>(tensor.shape(i)));
    strides.push_back(tensor.stride(i));
  }
  if (!c_contiguous(array.shape, strides, 1)) {
    value_error(where(call, argument) + " is not C-contiguous (make it contiguous first)");
  }
  // DLPack has no read-only flag for device memory: a read-only export is the producer's to
  // refuse.
  array.data = tensor.data();
  array.count = count_of(array.shape);
  return array;
}

}  // namespace

DeviceArray device_array(nb::handle object, const char* call, const char* argument, bool writable,
                         nb::handle dlpack_stream) {
  if (nb::hasattr(object, "__cuda_array_interface__")) {
    return from_interface(object, call, argument, writable);
  }
  if (nb::hasattr(object, "__dlpack__") && nb::hasattr(object, "__dlpack_device__")) {
    nb::tuple device = nb::borrow<nb::tuple>(object.attr("__dlpack_device__")());
    const int type = nb::cast<int>(device[0]);
    if (type != nb::device::cuda::value) {
      type_error(where(call, argument) + " is a " +
                 (type == nb::device::cpu::value
                      ? std::string("CPU array (DLPack kDLCPU)")
                      : "DLPack array on device type " + std::to_string(type)) +
                 kHostHint);
    }
    return from_dlpack(object, call, argument, dlpack_stream);
  }
  std::string kind = nb::cast<std::string>(nb::str(object.type().attr("__name__")));
  if (PyObject_CheckBuffer(object.ptr())) {
    type_error(where(call, argument) + " is a host buffer (" + kind + ")" + kHostHint);
  }
  type_error(where(call, argument) + " (" + kind +
             ") is not a device array: it has neither __cuda_array_interface__ nor "
             "__dlpack__/__dlpack_device__");
}

void require_like(const char* call, const DeviceArray& a, const DeviceArray& b, size_t expected,
                  const char* why) {
  if (b.type != a.type) {
    type_error(where(call, b.argument) + " is " + type_name(b.type) + " but " + a.argument +
               " is " + type_name(a.type));
  }
  if (b.count != expected) {
    value_error(where(call, b.argument) + " has " + std::to_string(b.count) +
                " elements; it needs " + why + " = " + std::to_string(expected));
  }
}

}  // namespace gloo_lite::python
