// The algorithm registry and the tuner. Each algorithm family registers, per collective it
// implements, a name, a `supports` predicate, a cost estimate from the latency-bandwidth model
// (t = steps*alpha + bytes_on_wire*beta + bytes_reduced*gamma, as docs/algorithms.md derives for
// each), the number of messages it sends and `run`. `auto` takes the supported algorithm with
// the smallest estimate, the larger of the critical path (cost) and the host's CPU time
// (messages * overhead * ranks per core): ranks that outnumber their cores wait for each other's
// CPU time more than for the wire. GLOO_LITE_ALGO or the call's option names one instead.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "gloo_lite/algorithms/call.h"

namespace gloo_lite::algo {

struct CostModel {
  double alpha;         // seconds per message step
  double beta;          // seconds per byte on the wire
  double gamma;         // seconds per byte of reduction input
  double overhead = 0;  // CPU seconds per message (send, receive, wake-up)
  // Between ranks of one host in a shared segment: seconds per step (a flag its reader sees)
  // and per byte copied. What the shm collectives and hierarchical's per-host phases cost. A
  // message algorithm keeps alpha and beta on one host too: charging it these made auto take
  // ring and recursive doubling over shm at P = 2 from 256 KiB, 1.5-2.5x slower as measured
  // (docs/algorithms.md, "Shared memory"). The defaults are those of GLOO_LITE_SHM_ALPHA_US and
  // GLOO_LITE_SHM_BETA_GBPS.
  double shm_alpha = 1e-6;
  double shm_beta = 1 / 6e9;
  // The part of alpha that is waiting: a step whose send must wait for a message the rank is
  // still to receive (a dependent round) costs alpha; a step that waits for nothing (the
  // independent sends of direct) keeps the rank's port busy for alpha - wait only.
  // 0 (the default here, as for models written out in tests): every step costs alpha.
  double wait = 0;
  // Between ranks of different hosts (issue 24): seconds per message step that crosses, and
  // seconds per byte over one host's link, which every rank of that host sending (or
  // receiving) across shares. 0: unknown, a crossing step then costs alpha and beta (the
  // model as it was before it knew the network). host_links.h counts what crosses.
  double net_alpha = 0;
  double net_beta = 0;
  // The fraction of a host link's rate that algorithms reach whose ranks send to another peer
  // in each step or to every peer at once (Partners::kChanging in host_links.h), against the
  // same neighbours every step: measured, not derived (GLOO_LITE_NET_CHANGING).
  double net_changing = 1;
  double cross_alpha() const { return net_alpha > 0 ? net_alpha : alpha; }
  double cross_beta() const { return net_beta > 0 ? net_beta : beta; }

  // From GLOO_LITE_ALPHA_US, GLOO_LITE_BETA_GBPS, GLOO_LITE_GAMMA_GBPS, GLOO_LITE_OVERHEAD_US,
  // GLOO_LITE_SHM_ALPHA_US, GLOO_LITE_SHM_BETA_GBPS, GLOO_LITE_WAIT_US, GLOO_LITE_NET_ALPHA_US,
  // GLOO_LITE_NET_BETA_GBPS (0: net_beta stays 0, for the context's probe to fill) and
  // GLOO_LITE_NET_CHANGING.
  static const CostModel& get();
  // get() with the network figure of `call`'s context where the knob leaves it to the probe
  // (ContextEngine::network_beta, agreed by every rank): the model auto ranks `call` with.
  static CostModel for_call(const Call& call);
};

struct Algorithm {
  const char* name;
  Collective collective;
  bool (*supports)(const Call& call);
  double (*cost)(const Call& call, const CostModel& model);  // seconds on the critical path
  double (*messages)(const Call& call);  // messages a rank sends, averaged over the ranks
  void (*run)(const Call& call);
};

// The tuner's estimate for `algorithm` on `call`: max(cost, host CPU time), in seconds.
double estimate(const Algorithm& algorithm, const Call& call, const CostModel& model);

// The algorithms of `call`'s collective that support it, cheapest estimate first (ties in
// registry order): what `auto` chooses from, and what gloo_lite_tuner prints.
struct Ranked {
  const Algorithm* algorithm;
  double estimate;  // seconds
};
std::vector<Ranked> rank_algorithms(const Call& call, const CostModel& model);

// The cheapest algorithm of `call`'s collective that supports it, leaving out those named in
// `exclude` (shm's fallback and hierarchical's phases ask for a message algorithm), under the
// same tie rule as rank_algorithms: auto's choice, as every caller must make it. `algorithm`
// is nullptr when none is left.
Ranked cheapest(const Call& call, const CostModel& model,
                std::initializer_list<const char*> exclude = {});

// Every registered algorithm, in registry order.
const std::vector<Algorithm>& all_algorithms();

// The algorithm for this call: `requested` ("auto" or a name) from the call's options, else
// GLOO_LITE_ALGO's entry for this collective, else the cheapest supported. An unknown or
// unsupported name throws InvalidArgument listing what this collective offers.
const Algorithm& choose_algorithm(const Call& call, const std::string& requested);

// The algorithm of this collective with this name, or nullptr.
const Algorithm* find_algorithm(Collective collective, const std::string& name);

// GLOO_LITE_ALGO's text ("allreduce:ring;broadcast:tree", or one bare name) as (collective,
// algorithm) pairs in order; a bare name has collective "*". Empty entries are skipped.
std::vector<std::pair<std::string, std::string>> parse_algorithm_spec(const std::string& spec);
// Throws InvalidArgument naming GLOO_LITE_ALGO, the entry and the valid names when an entry
// names an unknown collective, or an algorithm that the collective (or, for a bare name, every
// collective) lacks. "auto" is valid everywhere.
void check_algorithm_spec(const std::string& spec);

// The host of every rank of `call`: its context's (where the call spans the context's ranks),
// else the cluster it describes (call.hosts: gloo_lite_tuner's, or a phase's among some of the
// ranks); nullptr when neither says.
const std::vector<std::string>* hosts_of(const Call& call);
// Whether the hosts the call describes (without a context) are one: false when it spans
// several, true when it names none (a call's shape alone, as tests ask).
bool described_on_one_host(const Call& call);

// The latency term of `steps` single-port steps of which `depth` are dependent rounds (a rank
// must receive before it may send): (steps - depth) * (alpha - wait) + depth * alpha. Every
// algorithm's cost is this with depth = steps, except where sends wait for nothing.
double latency(double steps, double depth, const CostModel& model);

// log2 helpers for cost formulas.
int ceil_log2(int n);
bool is_power_of_two(int n);

}  // namespace gloo_lite::algo
