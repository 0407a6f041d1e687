// What gloo_lite sees of torch tensors: element types and reductions mapped onto gloo_lite's,
// checks that name the collective, and the staging of tensors gloo_lite cannot use in place
// (non-contiguous ones, lists of tensors that must travel as one buffer).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "gloo_lite/types.h"

namespace gloo_lite::torch_backend {

// A tensor as gloo_lite's collectives see it: `count` elements of `type` at `data`.
struct Elements {
  DataType type;
  size_t count;
};

// For collectives that only move data: the tensor's own type when gloo_lite has it (so that
// checks and messages speak of it), else its bytes (int16, bool, complex, ... all travel).
Elements moved_elements(const at::Tensor& tensor);

// For reductions: the type and op gloo_lite reduces with. Complex tensors reduce as pairs of
// reals (sum, avg, premul_sum only); bool as uint8 (sum is a logical or, as in torch's gloo;
// min, max, product and the bitwise ops keep their meaning on 0/1). Anything else gloo_lite
// cannot reduce (int16, uint16, float8, ...) or a bitwise op on floats is a ValueError naming
// the collective, the type and the op.
struct Reduction {
  DataType type = DataType::kUint8;
  ReduceOp op = ReduceOp::kSum;
  size_t per_element = 1;  // gloo_lite elements per tensor element (2 for complex)
  // PREMUL_SUM: inputs are multiplied by this before the sum; 1 otherwise.
  bool premultiply = false;
  double factor = 1.0;
  at::Tensor factor_tensor;  // PREMUL_SUM with a tensor factor
};
Reduction reduction_of(const char* collective, const at::Tensor& tensor,
                       const ::c10d::ReduceOp& op);
// `tensor` times the PREMUL_SUM factor, in place.
void premultiply(const Reduction& reduction, at::Tensor& tensor);

// "torch.float32", "torch.int16", ...: the names Python users write.
std::string dtype_name(at::ScalarType type);

// Throws ValueError unless `tensor` is a dense CPU tensor (gloo_lite registers for "cpu").
void check_cpu_dense(const char* collective, const at::Tensor& tensor);
// Whether a call's tensors are CUDA tensors (the first decides; the CUDA path checks the rest).
bool on_cuda(const std::vector<at::Tensor>& tensors);
// Throws ValueError unless `tensor` is a dense CUDA tensor.
void check_cuda_dense(const char* collective, const at::Tensor& tensor);
// single_tensor() for the CUDA path.
const at::Tensor& single_cuda_tensor(const char* collective,
                                     const std::vector<at::Tensor>& tensors);
// Throws ValueError unless there is exactly one tensor (torch passes one per process).
const at::Tensor& single_tensor(const char* collective, const std::vector<at::Tensor>& tensors);
// Throws ValueError unless every tensor has `like`'s dtype and number of elements.
void check_same_shape(const char* collective, const at::Tensor& like,
                      const std::vector<at::Tensor>& tensors, const char* what);

// A tensor as gloo_lite can use it: the tensor itself when contiguous, else a contiguous copy
// that finish_output() copies back (for outputs). `flat` is the 1-D view of that memory.
struct Staged {
  explicit Staged(const at::Tensor& user);
  // Copies the result back into `user` when `flat` is a copy.
  void finish_output() const;
  at::Tensor user;
  bool copied;  // `flat` is a contiguous copy of `user`, not `user` itself
  at::Tensor flat;
};

// One contiguous 1-D tensor holding `tensors` one after the other (a copy), and the way back.
at::Tensor flatten(const std::vector<at::Tensor>& tensors);
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& into);
// An uninitialised 1-D tensor of `count` elements like `like`.
at::Tensor flat_like(const at::Tensor& like, int64_t count);

// The checks and counts the CPU and CUDA paths share (ValueError naming the collective).
void check_root(const char* collective, int64_t root, int size);
void check_list_size(const char* collective, size_t got, int size, const char* what);
// gloo_lite elements per tensor element for a data-moving call (bytes for types gloo_lite
// does not have).
size_t moved_scale(const at::Tensor& tensor);
// A torch point-to-point tag as gloo_lite's (0 and up; ValueError naming `what` if negative).
uint64_t p2p_tag(const char* what, int tag);
// all_to_all_single: gloo_lite elements (times `scale`) per rank from torch's split sizes (rows
// of dimension 0); equal blocks when `splits` is empty.
std::vector<size_t> split_counts(const char* what, const at::Tensor& tensor,
                                 const std::vector<int64_t>& splits, int size, size_t scale);

}  // namespace gloo_lite::torch_backend
