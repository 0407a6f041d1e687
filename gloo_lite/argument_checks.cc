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

namespace {

// "+16" or "-16": where `a` starts relative to `b`, in bytes.
std::string relative(uintptr_t a, uintptr_t b) {
  return a >= b ? "+" + std::to_string(a - b) : "-" + std::to_string(b - a);
}

}  // namespace

void check_overlap(const char* collective, int rank, const void* input, size_t input_bytes,
                   const void* output, size_t output_bytes, const InPlaceForm& in_place) {
  const auto in = reinterpret_cast<uintptr_t>(input);
  const auto out = reinterpret_cast<uintptr_t>(output);
  for (auto [start, bytes, name] :
       {std::make_tuple(in, input_bytes, "input"), std::make_tuple(out, output_bytes, "output")}) {
    if (start != 0 && bytes > std::numeric_limits<uintptr_t>::max() - start) {
      throw InvalidArgument(std::string(collective) + " on rank " + std::to_string(rank) +
                            ": the " + name + " (" + std::to_string(bytes) +
                            " bytes) wraps past the end of memory");
    }
  }
  if (in == 0 || out == 0 || input_bytes == 0 || output_bytes == 0) return;
  if (in >= out + output_bytes || out >= in + input_bytes) return;  // disjoint
  // Unsigned wrap-around makes out + offset right for negative offsets too.
  if (in_place.exists && in == out + static_cast<uintptr_t>(in_place.offset)) return;
  std::string remedy = in_place.what;
  if (in_place.exists) {
    // Named from the buffer that lies inside the other (scatter's output inside its input).
    const std::string where =
        in_place.offset >= 0
            ? "the input at output+" + std::to_string(in_place.offset)
            : "the output at input+" + std::to_string(-static_cast<uintmax_t>(in_place.offset));
    remedy = "in place is " + remedy + " (" + where + " bytes): pass that, or disjoint buffers";
  }
  throw InvalidArgument(std::string(collective) + " on rank " + std::to_string(rank) +
                        ": the input (" + std::to_string(input_bytes) + " bytes at output" +
                        relative(in, out) + ") overlaps the output (" +
                        std::to_string(output_bytes) + " bytes); " + remedy);
}

}  // namespace gloo_lite
