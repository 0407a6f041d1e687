// Which algorithm a collective call would run, asked without running it: for benchmarks and tools
// that report the tuner's choice next to their measurements. Purely local (no communication, no
// sequence number consumed), so any rank may ask at any time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gloo_lite/context.h"
#include "gloo_lite/types.h"

namespace gloo_lite {

// The collectives by name: allreduce, reduce, reduce_scatter, allgather, gather, scatter,
// broadcast, alltoall, barrier.
std::vector<std::string> collective_names();

// The algorithms registered for `collective`, in registry order. Throws InvalidArgument for an
// unknown collective name (listing the known ones).
std::vector<std::string> algorithm_names(const std::string& collective);

// The name of the algorithm that `collective` would run on `context` for `count` elements of
// `type` with `requested` ("auto" or a name) as CollectiveOptions::algorithm, honouring
// GLOO_LITE_ALGO exactly as the call does. `count` is what the call takes: the whole vector for
// allreduce, reduce and broadcast, each rank's block for reduce_scatter, allgather, gather,
// scatter and alltoall, ignored for barrier. Throws InvalidArgument where the call would (an
// unknown algorithm, one that does not support this call).
std::string chosen_algorithm(Context& context, const std::string& collective, size_t count,
                             DataType type, ReduceOp op = ReduceOp::kSum, int root = 0,
                             const std::string& requested = "auto");

// What the tuner knows of `context`, fixed when it connected: for reports beside measurements.
struct TuningInputs {
  std::string device;     // the transport device's name ("tcp", "shm+tcp", ...)
  double ranks_per_core;  // ranks per usable CPU on the most crowded host, the same on every rank
  double network_beta;    // seconds per byte over a host's link, 0 on one host or when given
};
TuningInputs tuning_inputs(const Context& context);

}  // namespace gloo_lite
