// Deterministic inputs for the check (-c 1) and the values the collectives must produce from them.
// Element i of rank r is a small integer drawn from a hash of (r, i), in a range chosen so that
// the reduction of P of them is exact in the element type (a sum of P values stays within the
// type's exact-integer range; products use only 1 and 2; the bitwise ops, integer types only, use
// 7 bits). Results are then compared for
// equality whatever order an algorithm combines partial results in, and a block that lands at
// the wrong offset or from the wrong rank shows up as wrong values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gloo_lite/types.h"

namespace gloo_lite::bench {

class ValuePattern {
 public:
  // `reduces`: the values feed a reduction with `op` over `ranks` ranks; otherwise they are only
  // moved, and may use the type's whole exact-integer range.
  ValuePattern(DataType type, ReduceOp op, int ranks, bool reduces);

  // The input of `rank` at element `index`.
  double input(int rank, size_t index) const;
  // What the reduction over every rank's input at `index` must give, rounded to the type as the
  // library rounds it (avg divides the exact sum as finish_average does).
  double reduced(size_t index) const;

 private:
  DataType type_;
  ReduceOp op_;
  int ranks_;
  uint32_t range_;   // inputs are in [0, range_) (products: 1 or 2)
  bool single_two_;  // products too large for the type: one rank per index holds 2
};

// Writes pattern.input(rank, first + i) for i < count at `data`, as `type`.
void fill_values(DataType type, void* data, size_t count, const ValuePattern& pattern, int rank,
                 size_t first);

// Counts the elements data[i], i < count, that differ from expected(i) (an exact value of the
// type, as a double).
template <typename Expected>
size_t count_wrong(DataType type, const void* data, size_t count, Expected&& expected);

}  // namespace gloo_lite::bench

#include "bench_values_inl.h"
