#include "bench_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace gloo_lite::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The p-quantile (0..1) of sorted values, nearest rank.
double quantile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

double max_over_ranks(Context& context, double value) {
  allreduce(context, &value, &value, 1, DataType::kFloat64, ReduceOp::kMax, control_options());
  return value;
}

int64_t sum_over_ranks(Context& context, int64_t value) {
  allreduce(context, &value, &value, 1, DataType::kInt64, ReduceOp::kSum, control_options());
  return value;
}

int warm_up(Context& context, const Call& call, const Options& options, double calls,
            double extra_seconds) {
  int warmup = options.warmup;
  if (options.iterations > 0) {
    for (int i = 0; i < warmup; ++i) call.run();
    return options.iterations;
  }
  // The estimate times blocks of calls, each ended when every rank is done (a rank's own call
  // time is not enough: in a rooted collective the ranks that only send return at once and run
  // ahead, so their calls looked 20x cheaper than the pace the root sets, and the count
  // overshot its time per size as much: 4104 B gather on 2,2,1 ran 2-3 s, not 0.1 s). The first
  // calls grow scratch memory and caches: the first block is the later half of the warm-up, and
  // blocks double until one lasts a sixteenth of the time per size, so that the closing
  // synchronisation and the clock's grain do not count.
  warmup = std::max(warmup, 1);
  for (int i = 0; i < warmup / 2; ++i) call.run();
  double per_call = 0;
  for (int block = warmup - warmup / 2;; block *= 2) {
    auto start = Clock::now();
    for (int i = 0; i < block; ++i) call.run();
    max_over_ranks(context, 0);  // the block ends when the slowest rank finished its calls
    double seconds = max_over_ranks(context, seconds_since(start));
    per_call = seconds / block;
    if (seconds >= options.seconds_per_size / 16 || block >= (1 << 20)) break;
  }
  double per_iteration = std::max(per_call * calls + extra_seconds, 1e-7);
  double wanted = std::ceil(options.seconds_per_size / per_iteration);
  return static_cast<int>(std::clamp(wanted, 5.0, 1e6));
}

CollectiveOptions control_options() {
  CollectiveOptions options;
  options.tag = 1;
  return options;
}

double algbw_gbps(const Row& row, const Timing& timing) {
  return timing.time_us > 0 ? static_cast<double>(row.shape.bytes) / (timing.time_us * 1e3) : 0;
}

double busbw_gbps(const Row& row, const Timing& timing) {
  return algbw_gbps(row, timing) * row.info->bus_factor(row.ranks);
}

Timing measure(Context& context, const Call& call, const Options& options) {
  Timing timing;
  timing.measured = true;
  barrier(context, control_options());
  timing.iterations = warm_up(context, call, options);
  if (options.check) {
    // Outside the timed loop: fill, one call, verify every element.
    call.fill_inputs();
    call.run();
    timing.wrong = sum_over_ranks(context, static_cast<int64_t>(call.count_wrong()));
  }
  std::vector<double> per_iteration(options.per_iteration ? timing.iterations : 0);
  barrier(context, control_options());
  auto start = Clock::now();
  if (options.per_iteration) {
    for (double& seconds : per_iteration) {
      auto iteration_start = Clock::now();
      call.run();
      seconds = seconds_since(iteration_start);
    }
  } else {
    for (int i = 0; i < timing.iterations; ++i) call.run();
  }
  double average = seconds_since(start) / timing.iterations;
  timing.time_us = max_over_ranks(context, average) * 1e6;
  if (options.per_iteration) {
    // Each iteration counts as long as its slowest rank took.
    allreduce(context, per_iteration.data(), per_iteration.data(), per_iteration.size(),
              DataType::kFloat64, ReduceOp::kMax, control_options());
    std::sort(per_iteration.begin(), per_iteration.end());
    timing.p50_us = quantile(per_iteration, 0.5) * 1e6;
    timing.p99_us = quantile(per_iteration, 0.99) * 1e6;
  }
  return timing;
}

}  // namespace gloo_lite::bench
