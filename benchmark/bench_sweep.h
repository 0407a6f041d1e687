// Timing of one row: warm-up, the check, then the timed loop, reduced over ranks so that every
// rank holds the same numbers (time = max over ranks of each rank's average, as nccl-tests).
#pragma once

#include <cstdint>
#include <string>

#include "bench_collective.h"
#include "bench_options.h"

namespace gloo_lite::bench {

struct Timing {
  bool measured = false;  // false: the collective has no such form (printed N/A)
  int iterations = 0;
  double time_us = 0;  // max over ranks of the per-rank average
  int64_t wrong = -1;  // wrong elements over all ranks; -1 when not checked
  double p50_us = -1;  // per-iteration percentiles (-I), of the max over ranks; -1 when off
  double p99_us = -1;
};

// --overlap MS (bench_overlap.h): one size's three times, each the max over ranks of the
// per-rank average, and what they say.
struct OverlapTiming {
  bool measured = false;
  bool in_place = false;  // the form timed: out of place where the collective has one
  int iterations = 0;
  double comm_us = 0;   // the blocking call
  double comp_us = 0;   // the computation alone
  double total_us = 0;  // the non-blocking call started, the computation, then wait
  double overlap = 0;   // (comm + comp - total) / min(comm, comp): 1 hidden, 0 serial
  int64_t wrong = -1;   // of the non-blocking call under the computation; -1 when not checked
};

// One printed row: a size of one collective with one requested algorithm, both forms.
struct Row {
  const CollectiveInfo* info = nullptr;
  std::string requested;  // -A: "auto" or a name
  std::string chosen;     // what the library ran
  int ranks = 0;
  Shape shape;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  Timing out_of_place;
  Timing in_place;
  OverlapTiming overlap;  // --overlap instead of the two forms
};

// The options of the benchmark's own collectives (reducing timings, barriers, the rank list): a
// tag of their own, so that they never share a sequence with the measured calls, and "auto".
CollectiveOptions control_options();

// Collective over the context: every rank's value reduced, through control_options().
double max_over_ranks(Context& context, double value);
int64_t sum_over_ranks(Context& context, int64_t value);

// Runs the warm-up calls and returns the iteration count every rank agrees on: -n, or as many
// iterations as fit in --size-time when one iteration takes `calls` calls plus `extra_seconds`,
// judged from the slowest rank's warm-up. Collective over the context.
int warm_up(Context& context, const Call& call, const Options& options, double calls = 1,
            double extra_seconds = 0);

// GB/s with GB = 1e9 B: algbw = bytes / time, busbw = algbw * the collective's bus factor.
double algbw_gbps(const Row& row, const Timing& timing);
double busbw_gbps(const Row& row, const Timing& timing);

// Measures one form (in or out of place) of one call. Collective over the context: every rank
// calls it with the same setup and options.
Timing measure(Context& context, const Call& call, const Options& options);

}  // namespace gloo_lite::bench
