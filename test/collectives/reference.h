// The independent reference of the collectives tests: deterministic inputs per (rank, index,
// seed), and checks of a result against plain loops over every rank's inputs. Nothing here calls
// the library's conversions or reduction kernels: the 16-bit float formats are decoded and
// encoded by formats.h, and sums are taken in double (floats) or with exact
// wraparound arithmetic (integers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gloo_lite/types.h"
#include "test/collectives/guarded_buffer.h"

namespace gloo_lite::test {

// How the inputs of a case are drawn, so that every operation has an exact or boundable result:
//  kAdditive (sum, avg, custom): integers small enough that P <= 16 of them never overflow;
//    floats uniform in [-1, 1).
//  kProduct: integers +-1 except a factor 3 on one rank and 2 on another per element (|product|
//    <= 6); floats +-(1 + d), |d| <= 1/8, so that 16 factors stay far from overflow.
//  kOrdered (min, max, bxor) and kMove (data movement): any value (integers use all their bits).
//  kAndBits (band): integers whose bits are each 0 with probability 2^-k, the smallest k >= 1
//    with 2^k >= P, so that an AND over P ranks keeps a third of the bits or more, and a rank's
//    lost contribution (or a partial result seeded with zeros) shows. kOrBits (bor): the
//    complement, sparse ones, so that an OR is not all ones.
enum class Pattern { kAdditive, kProduct, kOrdered, kMove, kAndBits, kOrBits };
Pattern pattern_for(bool reducing, ReduceOp op);

// What identifies the inputs of one case.
struct Inputs {
  DataType type = DataType::kUint8;
  Pattern pattern = Pattern::kMove;
  uint64_t seed = 0;
  int ranks = 1;
};

// Bytes per element, from this file's table (not the library's).
size_t element_bytes(DataType type);

// splitmix64's finaliser: the one hash of the tests.
uint64_t mix64(uint64_t x);

// Writes elements first..first+count-1 of `rank`'s input to `out`.
void fill_inputs(const Inputs& inputs, int rank, size_t first, size_t count, void* out);

// Checks that `got` holds elements first..first+count-1 of rank `source`'s input, bit for bit.
void check_copy(const Inputs& inputs, int source, size_t first, size_t count, const void* got,
                const std::string& what, Problems& problems);
// Checks `got` against `op` over every rank's elements first..first+count-1: integers exactly
// (avg: exact sum, divided truncating toward zero; band/bor/bxor bit for bit); min/max exactly;
// float sums, averages and products within (P + 1) * epsilon of the format times the sum of
// magnitudes (for products: times the magnitude of the product), since algorithms associate in
// different orders.
void check_reduction(const Inputs& inputs, ReduceOp op, size_t first, size_t count, const void* got,
                     const std::string& what, Problems& problems);

// The custom operation of the tests: a + b + 1 in the element type (16-bit floats widened to
// float and rounded back). It is associative and commutative but has no identity element, so a
// result over P ranks is sum + (P - 1) exactly when an algorithm combined each contribution once
// and never seeded a partial result with zeros.
ReduceFunction plus_one_function(DataType type);

}  // namespace gloo_lite::test
