// --json FILE: every measured form of every row as one JSON object, in a single array, for
// scripts (benchmark/compare) that should not parse the table.
#pragma once

#include <string>

#include "bench_sweep.h"

namespace gloo_lite::bench {

class JsonReport {
 public:
  // Adds the row's measured forms (a form the collective lacks is left out), or with --overlap
  // its overlap times: comm_us, comp_us, total_us, overlap.
  void add(const Row& row);
  // Writes the array; throws gloo_lite::Error naming the file when it cannot.
  void write(const std::string& path) const;

 private:
  void add_form(const Row& row, const Timing& timing, bool in_place);
  void add_overlap(const Row& row);
  void append(const std::string& object);
  std::string objects_;
};

}  // namespace gloo_lite::bench
