// Which algorithm a collective call would run, asked without running it: for benchmarks and tools
// that report the tuner's choice next to their measurements. Purely local (no communication, no
// sequence number consumed), so any rank may ask at any time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gloo_lite/collective_info.h"
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

// A call on a cluster described without a context, as gloo_lite_tuner asks: the registry's
// answers for a job that has not run. `count` is what the call takes, as for
// chosen_algorithm. The cost model is this process's (its knobs, as a job would read them).
struct DescribedCall {
  Collective collective = Collective::kAllreduce;
  int ranks = 1;
  size_t count = 0;
  DataType type = DataType::kFloat32;
  double ranks_per_core = 1;       // ranks per usable CPU on the most crowded host
  std::vector<std::string> hosts;  // the host of every rank; empty: not described (one host)
};

// What chosen_algorithm answers, for a described call: `requested`, else GLOO_LITE_ALGO's
// entry, else the cheapest supported.
std::string described_choice(const DescribedCall& call, const std::string& requested = "auto");

// Every algorithm that supports the described call with the tuner's estimate (the larger of
// its critical path and the hosts' CPU time), cheapest first, ties in registry order: what
// `auto` chooses from. Empty when none supports it.
struct AlgorithmEstimate {
  std::string algorithm;
  double seconds;
};
std::vector<AlgorithmEstimate> described_estimates(const DescribedCall& call);

// The cost model's figures under this process's knobs (docs/algorithms.md), for reports: per
// message step (seconds) and per byte (seconds), between ranks, between hosts (the network's
// figures, or alpha and beta where its knobs leave them unknown) and in a host's shared segment.
struct CostFigures {
  double alpha;
  double beta;
  double gamma;     // per byte of reduction input
  double overhead;  // CPU seconds per message
  double network_alpha;
  double network_beta;
  double shm_alpha;
  double shm_beta;
};
CostFigures cost_figures();

}  // namespace gloo_lite
