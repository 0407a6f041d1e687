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
  if (options.iterations == 0) warmup = std::max(warmup, 1);  // the estimate needs one
  double estimate = 0;
  int timed = 0;
  for (int i = 0; i < warmup; ++i) {
    auto start = Clock::now();
    call.run();
    // The first calls grow scratch memory and caches; estimate from the later half.
    if (i >= warmup / 2) {
      estimate += seconds_since(start);
      ++timed;
    }
  }
  if (options.iterations > 0) return options.iterations;
  double per_call = max_over_ranks(context, estimate / std::max(timed, 1));
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
