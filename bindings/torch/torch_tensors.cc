#include "bindings/torch/torch_tensors.h"

#include <string>

#include "gloo_lite/base/error.h"

namespace gloo_lite::torch_backend {
namespace {

// gloo_lite's type for a torch type of the same bits, or false.
bool native_type(at::ScalarType scalar, DataType& type) {
  switch (scalar) {
    case at::kByte:
      type = DataType::kUint8;
      return true;
    case at::kChar:
      type = DataType::kInt8;
      return true;
    case at::kInt:
      type = DataType::kInt32;
      return true;
    case at::kUInt32:
      type = DataType::kUint32;
      return true;
    case at::kLong:
      type = DataType::kInt64;
      return true;
    case at::kUInt64:
      type = DataType::kUint64;
      return true;
    case at::kHalf:
      type = DataType::kFloat16;
      return true;
    case at::kBFloat16:
      type = DataType::kBFloat16;
      return true;
    case at::kFloat:
      type = DataType::kFloat32;
      return true;
    case at::kDouble:
      type = DataType::kFloat64;
      return true;
    default:
      return false;
  }
}

const char* torch_op_name(::c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case ::c10d::ReduceOp::SUM:
      return "SUM";
    case ::c10d::ReduceOp::AVG:
      return "AVG";
    case ::c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case ::c10d::ReduceOp::MIN:
      return "MIN";
    case ::c10d::ReduceOp::MAX:
      return "MAX";
    case ::c10d::ReduceOp::BAND:
      return "BAND";
    case ::c10d::ReduceOp::BOR:
      return "BOR";
    case ::c10d::ReduceOp::BXOR:
      return "BXOR";
    case ::c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "an unknown op";
  }
}

[[noreturn]] void cannot_reduce(const char* collective, const at::Tensor& tensor,
                                ::c10d::ReduceOp::RedOpType op, const std::string& why) {
  throw InvalidArgument(std::string(collective) + ": gloo_lite cannot reduce a " +
                        dtype_name(tensor.scalar_type()) + " tensor with " + torch_op_name(op) +
                        ": " + why);
}

}  // namespace

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kByte:
      return "torch.uint8";
    case at::kChar:
      return "torch.int8";
    case at::kShort:
      return "torch.int16";
    case at::kInt:
      return "torch.int32";
    case at::kLong:
      return "torch.int64";
    case at::kUInt16:
      return "torch.uint16";
    case at::kUInt32:
      return "torch.uint32";
    case at::kUInt64:
      return "torch.uint64";
    case at::kHalf:
      return "torch.float16";
    case at::kBFloat16:
      return "torch.bfloat16";
    case at::kFloat:
      return "torch.float32";
    case at::kDouble:
      return "torch.float64";
    case at::kBool:
      return "torch.bool";
    case at::kComplexFloat:
      return "torch.complex64";
    case at::kComplexDouble:
      return "torch.complex128";
    default:
      return std::string("torch.") + c10::toString(type);
  }
}

Elements moved_elements(const at::Tensor& tensor) {
  DataType type;
  if (native_type(tensor.scalar_type(), type)) {
    return {type, static_cast<size_t>(tensor.numel())};
  }
  return {DataType::kUint8, static_cast<size_t>(tensor.numel()) * tensor.element_size()};
}

Reduction reduction_of(const char* collective, const at::Tensor& tensor,
                       const ::c10d::ReduceOp& op) {
  Reduction reduction;
  const auto kind = op.op_;
  switch (kind) {
    case ::c10d::ReduceOp::SUM:
      reduction.op = ReduceOp::kSum;
      break;
    case ::c10d::ReduceOp::AVG:
      reduction.op = ReduceOp::kAvg;
      break;
    case ::c10d::ReduceOp::PRODUCT:
      reduction.op = ReduceOp::kProd;
      break;
    case ::c10d::ReduceOp::MIN:
      reduction.op = ReduceOp::kMin;
      break;
    case ::c10d::ReduceOp::MAX:
      reduction.op = ReduceOp::kMax;
      break;
    case ::c10d::ReduceOp::BAND:
      reduction.op = ReduceOp::kBand;
      break;
    case ::c10d::ReduceOp::BOR:
      reduction.op = ReduceOp::kBor;
      break;
    case ::c10d::ReduceOp::BXOR:
      reduction.op = ReduceOp::kBxor;
      break;
    case ::c10d::ReduceOp::PREMUL_SUM: {
      reduction.op = ReduceOp::kSum;
      reduction.premultiply = true;
      const auto* supplement =
          dynamic_cast<const ::c10d::PreMulSumSupplement*>(op.supplement_.get());
      if (supplement == nullptr) {
        cannot_reduce(collective, tensor, kind,
                      "PREMUL_SUM needs its factor (make the op with "
                      "torch.distributed._make_nccl_premul_sum(factor))");
      }
      if (supplement->tensor_factor.defined()) {
        reduction.factor_tensor = supplement->tensor_factor;
      } else {
        reduction.factor = supplement->double_factor;
      }
      break;
    }
    default:
      cannot_reduce(collective, tensor, kind, "gloo_lite knows no such reduction");
  }
  const bool bitwise = reduction.op == ReduceOp::kBand || reduction.op == ReduceOp::kBor ||
                       reduction.op == ReduceOp::kBxor;
  const at::ScalarType scalar = tensor.scalar_type();
  if (scalar == at::kBool) {
    if (kind == ::c10d::ReduceOp::AVG || kind == ::c10d::ReduceOp::PREMUL_SUM) {
      cannot_reduce(collective, tensor, kind, "an average of booleans is not a boolean");
    }
    reduction.type = DataType::kUint8;
    if (reduction.op == ReduceOp::kSum) reduction.op = ReduceOp::kBor;
    return reduction;
  }
  if (at::isComplexType(scalar)) {
    if (reduction.op != ReduceOp::kSum && reduction.op != ReduceOp::kAvg) {
      cannot_reduce(collective, tensor, kind,
                    "complex tensors reduce with SUM, AVG or PREMUL_SUM only");
    }
    reduction.type = scalar == at::kComplexDouble ? DataType::kFloat64 : DataType::kFloat32;
    if (scalar != at::kComplexDouble && scalar != at::kComplexFloat) {
      cannot_reduce(collective, tensor, kind, "only complex64 and complex128 are supported");
    }
    reduction.per_element = 2;
    return reduction;
  }
  if (!native_type(scalar, reduction.type)) {
    cannot_reduce(collective, tensor, kind,
                  "its reductions cover uint8, int8, int32, uint32, int64, uint64, float16, "
                  "bfloat16, float32 and float64 (convert the tensor, e.g. .to(torch.int32))");
  }
  if (bitwise && at::isFloatingType(scalar)) {
    cannot_reduce(collective, tensor, kind, "bitwise reductions need an integer tensor");
  }
  if (reduction.premultiply && !at::isFloatingType(scalar)) {
    cannot_reduce(collective, tensor, kind,
                  "PREMUL_SUM multiplies by a real factor, so it needs a floating-point tensor");
  }
  return reduction;
}

void premultiply(const Reduction& reduction, at::Tensor& tensor) {
  if (!reduction.premultiply) return;
  if (reduction.factor_tensor.defined()) {
    tensor.mul_(reduction.factor_tensor.to(tensor.device()));
  } else {
    tensor.mul_(reduction.factor);
  }
}

namespace {

// A defined, dense, strided tensor on the device kind the path takes (CPU, or CUDA).
void check_dense(const char* collective, const at::Tensor& tensor, bool cuda) {
  if (!tensor.defined()) {
    throw InvalidArgument(std::string(collective) + ": got an undefined tensor");
  }
  if (!cuda && !tensor.device().is_cpu()) {
    throw InvalidArgument(std::string(collective) + ": gloo_lite takes CPU tensors, got one on " +
                          tensor.device().str() +
                          " (use a \"cpu:gloo_lite,cuda:nccl\" backend, or move it with .cpu())");
  }
  if (cuda && !tensor.is_cuda()) {
    throw InvalidArgument(std::string(collective) +
                          ": the call's first tensor is on CUDA, but another is on " +
                          tensor.device().str() + "; pass all of one call's tensors on one device");
  }
  if (tensor.is_conj() || tensor.is_neg()) {
    throw InvalidArgument(std::string(collective) +
                          ": the tensor is a lazily conjugated or negated view (its memory holds "
                          "other values); call .resolve_conj() / .resolve_neg() first");
  }
  if (tensor.layout() != at::kStrided) {
    throw InvalidArgument(std::string(collective) +
                          ": gloo_lite takes dense tensors, got a sparse or other non-strided "
                          "one (call .to_dense())");
  }
}

const at::Tensor& single(const char* collective, const std::vector<at::Tensor>& tensors,
                         bool cuda) {
  if (tensors.size() != 1) {
    throw InvalidArgument(std::string(collective) +
                          ": gloo_lite takes one tensor per process, got " +
                          std::to_string(tensors.size()));
  }
  check_dense(collective, tensors[0], cuda);
  return tensors[0];
}

}  // namespace

void check_cpu_dense(const char* collective, const at::Tensor& tensor) {
  check_dense(collective, tensor, /*cuda=*/false);
}
void check_cuda_dense(const char* collective, const at::Tensor& tensor) {
  check_dense(collective, tensor, /*cuda=*/true);
}
bool on_cuda(const std::vector<at::Tensor>& tensors) {
  return !tensors.empty() && tensors[0].defined() && tensors[0].is_cuda();
}
const at::Tensor& single_cuda_tensor(const char* collective,
                                     const std::vector<at::Tensor>& tensors) {
  return single(collective, tensors, /*cuda=*/true);
}

const at::Tensor& single_tensor(const char* collective, const std::vector<at::Tensor>& tensors) {
  return single(collective, tensors, /*cuda=*/false);
}

void check_same_shape(const char* collective, const at::Tensor& like,
                      const std::vector<at::Tensor>& tensors, const char* what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_cpu_dense(collective, tensors[i]);
    if (tensors[i].scalar_type() != like.scalar_type() || tensors[i].numel() != like.numel()) {
      throw InvalidArgument(std::string(collective) + ": " + what + " " + std::to_string(i) +
                            " is " + dtype_name(tensors[i].scalar_type()) + " with " +
                            std::to_string(tensors[i].numel()) + " elements, but the input is " +
                            dtype_name(like.scalar_type()) + " with " +
                            std::to_string(like.numel()));
    }
  }
}

Staged::Staged(const at::Tensor& user)
    : user(user),
      copied(!user.is_contiguous()),
      flat((copied ? user.contiguous() : user).view({-1})) {}

void Staged::finish_output() const {
  if (copied) user.copy_(flat.view(user.sizes()));
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flats;
  flats.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) flats.push_back(tensor.reshape({-1}));
  return at::cat(flats);
}

void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& into) {
  int64_t offset = 0;
  for (const at::Tensor& tensor : into) {
    const int64_t count = tensor.numel();
    tensor.copy_(flat.narrow(0, offset, count).view(tensor.sizes()));
    offset += count;
  }
}

at::Tensor flat_like(const at::Tensor& like, int64_t count) {
  return at::empty({count}, like.options().memory_format(at::MemoryFormat::Contiguous));
}

void check_root(const char* collective, int64_t root, int size) {
  if (root < 0 || root >= size) {
    throw InvalidArgument(std::string(collective) + ": root rank " + std::to_string(root) +
                          " is outside the group of " + std::to_string(size) + " ranks");
  }
}

// gloo_lite elements per tensor element for a data-moving call (bytes for types gloo_lite
// does not have).
size_t moved_scale(const at::Tensor& tensor) {
  return moved_elements(tensor).type == DataType::kUint8 ? tensor.element_size() : 1;
}

void check_list_size(const char* collective, size_t got, int size, const char* what) {
  if (got != static_cast<size_t>(size)) {
    throw InvalidArgument(std::string(collective) + ": " + what +
                          " must hold one tensor per rank (" + std::to_string(size) + "), got " +
                          std::to_string(got));
  }
}

// Element counts per rank from torch's split sizes (rows of dimension 0); equal blocks when
// `splits` is empty.
std::vector<size_t> split_counts(const char* what, const at::Tensor& tensor,
                                 const std::vector<int64_t>& splits, int size, size_t scale) {
  const int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
  const int64_t row_elements = rows == 0 ? 0 : tensor.numel() / rows;
  std::vector<size_t> counts(size);
  if (splits.empty()) {
    if (rows % size != 0) {
      throw InvalidArgument(std::string("all_to_all_single: the ") + what + "'s " +
                            std::to_string(rows) + " rows do not split evenly over " +
                            std::to_string(size) + " ranks (pass split sizes)");
    }
    for (auto& count : counts) count = (rows / size) * row_elements * scale;
    return counts;
  }
  if (splits.size() != static_cast<size_t>(size)) {
    throw InvalidArgument(std::string("all_to_all_single: ") + what + " split sizes name " +
                          std::to_string(splits.size()) + " ranks, the group has " +
                          std::to_string(size));
  }
  int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    if (splits[r] < 0) {
      throw InvalidArgument(std::string("all_to_all_single: a negative ") + what + " split size");
    }
    total += splits[r];
    counts[r] = static_cast<size_t>(splits[r] * row_elements) * scale;
  }
  if (total != rows) {
    throw InvalidArgument(std::string("all_to_all_single: the ") + what +
                          " split sizes add up to " + std::to_string(total) + " rows, the " + what +
                          " has " + std::to_string(rows));
  }
  return counts;
}

uint64_t p2p_tag(const char* what, int tag) {
  if (tag < 0) {
    throw InvalidArgument(std::string(what) + ": tag " + std::to_string(tag) +
                          " is negative; gloo_lite's point-to-point tags are 0 and up");
  }
  return static_cast<uint64_t>(tag);
}

}  // namespace gloo_lite::torch_backend
