#include "gloo_lite/argument_checks.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <tuple>

#include "gloo_lite/base/error.h"

namespace gloo_lite {

size_t max_buffer_bytes() { return static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max()); }

size_t checked_bytes(const char* collective, size_t elements, size_t element_bytes,
                     const char* what) {
  if (element_bytes != 0 && elements > max_buffer_bytes() / element_bytes) {
    throw InvalidArgument(std::string(collective) + ": " + what + " of " +
                          std::to_string(elements) + " elements of " +
                          std::to_string(element_bytes) + " bytes is larger than any buffer (" +
                          std::to_string(max_buffer_bytes()) + " bytes); check the count");
  }
  return elements * element_bytes;
}

size_t checked_total(const char* collective, const std::vector<size_t>& counts,
                     size_t element_bytes, const char* what) {
  size_t total = 0;
  for (size_t rank = 0; rank < counts.size(); ++rank) {
    if (counts[rank] > max_buffer_bytes() - total) {
      throw InvalidArgument(std::string(collective) + ": " + what + " sum past the largest " +
                            "buffer at rank " + std::to_string(rank) + " (count " +
                            std::to_string(counts[rank]) + " after " + std::to_string(total) +
                            " elements); check the counts");
    }
    total += counts[rank];
  }
  checked_bytes(collective, total, element_bytes, what);
  return total;
}

void check_op(const char* collective, int rank, DataType type, ReduceOp op) {
  if (static_cast<int>(op) > static_cast<int>(ReduceOp::kBxor)) {
    throw InvalidArgument(std::string(collective) + ": ReduceOp " +
                          std::to_string(static_cast<int>(op)) + " is not a reduction");
  }
  if (is_bitwise(op) && !is_integer(type)) {
    throw InvalidArgument(std::string(collective) + " on rank " + std::to_string(rank) + ": op " +
                          op_name(op) + " on " + type_name(type) +
                          " data: the bitwise ops (band, bor, bxor) need an integer type (int8, "
                          "uint8, int32, uint32, int64, uint64); reinterpret the data as one of "
                          "those or use another op");
  }
}

void check_overlap(const char* collective, const void* a, size_t a_bytes, const char* a_name,
                   const void* b, size_t b_bytes, const char* b_name) {
  auto start_a = reinterpret_cast<uintptr_t>(a);
  auto start_b = reinterpret_cast<uintptr_t>(b);
  for (auto [start, bytes, name] :
       {std::make_tuple(start_a, a_bytes, a_name), std::make_tuple(start_b, b_bytes, b_name)}) {
    if (start != 0 && bytes > std::numeric_limits<uintptr_t>::max() - start) {
      throw InvalidArgument(std::string(collective) + ": the " + name + " (" +
                            std::to_string(bytes) + " bytes) wraps past the end of memory");
    }
  }
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0 || a == b) return;
  if (start_a < start_b + b_bytes && start_b < start_a + a_bytes) {
    throw InvalidArgument(std::string(collective) + ": the " + a_name + " and the " + b_name +
                          " overlap without being the same buffer (" + a_name + " at +0.." +
                          std::to_string(a_bytes) + ", " + b_name + " at " +
                          (start_b >= start_a ? "+" + std::to_string(start_b - start_a)
                                              : "-" + std::to_string(start_a - start_b)) +
                          "); pass the same pointer for in place, or disjoint buffers");
  }
}

}  // namespace gloo_lite
