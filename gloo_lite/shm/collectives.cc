// Shared-memory collectives ("shm"): for a context whose ranks all run on one host, the data
// goes through one shared segment per stream (gloo_lite/shm/host_segment.h) instead of messages.
// Each step, every rank copies its part into its slot of one of two alternating buffers and
// publishes its sequence flag; the others read the slots directly (reduce with the kernels of
// reduction.h, or copy out). Steps are chunks of GLOO_LITE_SHM_CHUNK_BYTES per rank, so large
// calls pipeline through a fixed segment and the double buffer lets fast ranks run one step
// ahead. docs/algorithms.md ("shm") has the steps and the cost.
//
// This file: the "shm" family's entries in the registry (when it applies, its cost, running a
// call in the stream's segment or, where none can be made, on messages). The steps are in
// steps.cc and broadcast.cc, the segment in host_segment.h.
#include <algorithm>
#include <cmath>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/shm/collectives.h"
#include "gloo_lite/shm/host_segment.h"
#include "gloo_lite/shm/steps.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite::algo {
namespace {

using shm_steps::kOneStepBytes;

size_t chunk_bytes() {
  static const size_t bytes = static_cast<size_t>(knob_int("GLOO_LITE_SHM_CHUNK_BYTES"));
  return bytes;
}

bool supports(const Call& call) {
  // A reduce_scatter step gives each rank's block chunk/P bytes: at least one element. Without
  // a context (a call's shape alone, as tests ask) only the shape and the hosts it describes
  // (gloo_lite_tuner's cluster) are judged.
  return chunk_bytes() / static_cast<size_t>(call.size) >= call.element &&
         (call.context == nullptr ? described_on_one_host(call)
                                  : call.context->shm_collectives_allowed());
}

// The cheapest message algorithm for this call: what runs when the segment cannot be made.
const Algorithm& fallback(const Call& call) {
  Ranked best = cheapest(call, CostModel::get(), {"shm"});
  if (best.algorithm == nullptr) {
    throw InvalidArgument(std::string(collective_name(call.collective)) +
                          ": no message algorithm to fall back to from shm");
  }
  return *best.algorithm;
}

template <void (*Body)(const Call&, HostSegment&)>
void run(const Call& call) {
  HostSegment* segment = call.context->host_segment(call, chunk_bytes());
  if (segment == nullptr) {
    fallback(call).run(call);  // every rank got the same verdict
    return;
  }
  run_in_segment(call, *segment, call.rank, Body);
}

// --- cost: copies at memory bandwidth and flag round trips, on CPUs that the ranks share
// (the model's shm_beta and shm_alpha: GLOO_LITE_SHM_BETA_GBPS, GLOO_LITE_SHM_ALPHA_US) ---

struct Work {
  double steps = 0;    // flag round trips on the critical path
  double copied = 0;   // bytes each rank copies
  double reduced = 0;  // bytes of reduction input each rank reads
};

Work work_of(const Call& call) {
  const double bytes = static_cast<double>(call.total_bytes());
  const double chunk = static_cast<double>(chunk_bytes());
  const double p = call.size;
  Work work;
  switch (call.collective) {
    case Collective::kAllreduce:
    case Collective::kReduce:
      if (bytes <= std::min<double>(kOneStepBytes, chunk)) {
        work = {1, bytes, p * bytes};
      } else {
        work = {2 * std::ceil(bytes / chunk), 2 * bytes, bytes};
      }
      break;
    case Collective::kReduceScatter:
      work = {std::max(1.0, std::ceil(bytes / chunk)), bytes, bytes};
      break;
    case Collective::kAllgather:
      work = {std::max(1.0, std::ceil(bytes / p / chunk)), bytes, 0};
      break;
    case Collective::kBroadcast:
      work = {std::max(1.0, std::ceil(bytes / (p * chunk))), bytes, 0};
      break;
    default:
      work = {1, 0, 0};
  }
  return work;
}

double cost(const Call& call, const CostModel& model) {
  Work work = work_of(call);
  // Ranks beyond the cores wait for each other's CPU: a flag is then a futex wake-up. The
  // copies are not scaled by the load, as the message algorithms' wire term (whose kernel
  // copies share the same cores) is not either: on one host shm then wins at every size, as
  // measured (docs/algorithms.md, "shm measured"; scaling them made auto take
  // halving_doubling at P = 8 from 1 MiB, 2-4x slower there).
  double flag =
      call.ranks_per_core > 1 ? 5 * model.shm_alpha * call.ranks_per_core : model.shm_alpha;
  return work.steps * flag + work.copied * model.shm_beta + work.reduced * model.gamma;
}

double messages(const Call&) { return 0; }

}  // namespace

size_t shm_chunk_bytes() { return chunk_bytes(); }

void run_shm_steps(const Call& call, HostSegment& segment) {
  switch (call.collective) {
    case Collective::kAllreduce:
      return shm_steps::allreduce(call, segment);
    case Collective::kReduce:
      return shm_steps::reduce(call, segment);
    case Collective::kBroadcast:
      return shm_steps::broadcast(call, segment);
    case Collective::kReduceScatter:
      return shm_steps::reduce_scatter(call, segment);
    case Collective::kAllgather:
      return shm_steps::allgather(call, segment);
    case Collective::kBarrier:
      return shm_steps::barrier(call, segment);
    default:
      throw InvalidArgument(std::string(collective_name(call.collective)) +
                            " has no shared-memory steps");
  }
}

double shm_cost(const Call& call, const CostModel& model) { return cost(call, model); }

std::vector<Algorithm> shm_algorithms() {
  return {
      {"shm", Collective::kAllreduce, supports, cost, messages, run<shm_steps::allreduce>},
      {"shm", Collective::kReduceScatter, supports, cost, messages, run<shm_steps::reduce_scatter>},
      {"shm", Collective::kAllgather, supports, cost, messages, run<shm_steps::allgather>},
      {"shm", Collective::kBroadcast, supports, cost, messages, run<shm_steps::broadcast>},
      {"shm", Collective::kReduce, supports, cost, messages, run<shm_steps::reduce>},
      {"shm", Collective::kBarrier, supports, cost, messages, run<shm_steps::barrier>},
  };
}

void run_in_segment(const Call& call, HostSegment& segment, int context_rank,
                    void (*steps)(const Call&, HostSegment&)) {
  segment.begin(call);
  try {
    steps(call, segment);
    if (call.op == ReduceOp::kCustom) {
      // A user's reduction may throw, and in most steps a rank reduces only what the others
      // published, so nobody would wait for it: its peers would return and fail only at their
      // next call. One more round, in which each rank says its reductions succeeded, fails
      // them in this call (the thrower's abort reaches them in wait_all), as on messages. The
      // built-in operations never throw and skip it.
      segment.publish();
      segment.wait_all(segment.seq());
    }
  } catch (const MismatchError& e) {
    segment.abort(context_rank, transport::ErrorKind::kMismatch, e.what());
    segment.end();
    throw;
  } catch (...) {
    segment.end();  // the segment's texts name context ranks; a relayed abort keeps its cause
    throw;
  }
  segment.end();
}

}  // namespace gloo_lite::algo
