// The text output of gloo_lite_bench, laid out as nccl-tests lays out its tables: '#' header
// lines, one row per size with out-of-place and in-place columns, a footer per table. Rank 0
// prints; the numbers are already reduced over ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_sweep.h"

namespace gloo_lite::bench {

struct RunDescription {
  std::string version;    // gloo_lite's
  std::string transport;  // -t
  std::string device;     // the transport device's description
  std::string host;       // rank 0's host
  int ranks = 0;
  double ranks_per_core = 0;            // on the busiest host, as the tuner sees it
  std::vector<std::string> rank_lines;  // "pid 123 on host", one per rank
  std::string compute_steps;            // --overlap: the calibrated loop's length, "min..max"
  std::string device_layer;             // -m cuda / host-stand-in: the layer and staging pool
};

void print_run_header(const RunDescription& run, const Options& options);

// One table per (collective, requested algorithm). With --overlap its rows hold the three
// overlap times (bench_overlap.h) instead of the two forms.
class Table {
 public:
  Table(const CollectiveInfo& info, const Options& options);
  // The column headings, naming the requested algorithm.
  void print_header(const std::string& algorithm) const;
  // Prints the row and adds it to the footer's sums.
  void print_row(const Row& row);
  // A row whose explicit algorithm does not support the size: N/A columns.
  void print_unsupported(const Row& row);
  // "# Out of bounds values" and "# Avg bus bandwidth" of this table.
  void print_footer() const;

 private:
  void print_form(const Row& row, const Timing& timing);
  void print_overlap_header(const std::string& algorithm) const;
  void print_overlap(const OverlapTiming& timing);

  const CollectiveInfo& info_;
  double overlap_ms_;  // --overlap; 0: the bandwidth table
  bool per_iteration_;
  bool check_;
  int64_t wrong_ = 0;
  double busbw_sum_ = 0;
  int busbw_count_ = 0;
  double overlap_sum_ = 0;
  int overlap_count_ = 0;
};

}  // namespace gloo_lite::bench
