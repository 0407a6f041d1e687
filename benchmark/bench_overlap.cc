#include "bench_overlap.h"

#include <algorithm>
#include <chrono>

namespace gloo_lite::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds that `body` takes on this rank, started right after a barrier so that no rank's
// interval includes waiting for a slower rank to finish the previous phase.
template <typename Body>
double timed_after_barrier(Context& context, Body&& body) {
  barrier(context, control_options());
  auto start = Clock::now();
  body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

double overlap_of(double comm, double comp, double total) {
  double shorter = std::min(comm, comp);
  return shorter > 0 ? (comm + comp - total) / shorter : 0;
}

OverlapTiming measure_overlap(Context& context, const CollectiveCall& call, bool in_place,
                              const Compute& compute, const Options& options) {
  OverlapTiming timing;
  timing.measured = true;
  timing.in_place = in_place;
  barrier(context, control_options());
  // An iteration runs the call twice and the computation twice.
  timing.iterations = warm_up(context, call, options, 2, 2 * compute.milliseconds() * 1e-3);
  // The non-blocking path has its own first-time costs (a stream's worker, its queue).
  call.start().wait();
  if (options.check) {
    call.fill_inputs();
    Work work = call.start();
    compute.run();
    work.wait();
    timing.wrong = sum_over_ranks(context, static_cast<int64_t>(call.count_wrong()));
  }
  // Interleaved, so that a slow phase of the machine (other jobs, frequency) touches all three.
  double comm = 0;
  double comp = 0;
  double total = 0;
  for (int i = 0; i < timing.iterations; ++i) {
    comm += timed_after_barrier(context, [&] { call.run(); });
    comp += timed_after_barrier(context, [&] { compute.run(); });
    total += timed_after_barrier(context, [&] {
      Work work = call.start();
      compute.run();
      work.wait();
    });
  }
  double n = timing.iterations;
  timing.comm_us = max_over_ranks(context, comm / n) * 1e6;
  timing.comp_us = max_over_ranks(context, comp / n) * 1e6;
  timing.total_us = max_over_ranks(context, total / n) * 1e6;
  timing.overlap = overlap_of(timing.comm_us, timing.comp_us, timing.total_us);
  return timing;
}

}  // namespace gloo_lite::bench
