// gloo_lite_bench --overlap MS: does the library make progress on a non-blocking collective
// while the caller computes? Per size it times, interleaved in every iteration and each after a
// barrier: the blocking call (comm), MS ms of CPU-bound computation alone (comp, bench_compute.h),
// and the non-blocking call started, the computation, then Work::wait (total). A library that
// only progresses inside wait gives total = comm + comp, overlap 0; one that fully hides the
// shorter of the two behind the longer gives total = max(comm, comp), overlap 1.
#pragma once

#include "bench_collective.h"
#include "bench_compute.h"
#include "bench_options.h"
#include "bench_sweep.h"

namespace gloo_lite::bench {

// Collective over the context. `call` is the form to time (out of place where the collective
// has one); the check (-c 1) verifies the non-blocking call that ran under the computation.
OverlapTiming measure_overlap(Context& context, const CollectiveCall& call, bool in_place,
                              const Compute& compute, const Options& options);

// (comm + comp - total) / min(comm, comp); 0 when either time is 0.
double overlap_of(double comm, double comp, double total);

}  // namespace gloo_lite::bench
