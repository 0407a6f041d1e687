// Hierarchical collectives ("hierarchical"): for a context whose ranks span several hosts with
// several ranks on some of them. Each call runs in phases on groups of its ranks: the ranks of
// one host in their host's shared segment (the shm steps of gloo_lite/shm/ on a segment over that
// group, HostSegment::attach with a group), and one rank per host over the network with the
// cheapest message algorithm for that group (ring, halving_doubling, tree, ... unchanged: they run
// on a SubsetMesh, a view of the context's mesh restricted to those ranks): a leader per host, or K
// lanes at once (allreduce, allgather, reduce_scatter, large broadcasts), lane i being local
// rank i of every host with slice i of the vector. docs/algorithms.md ("hierarchical") has the
// phases, the cost and when auto picks it.
//
// Every phase is a part of the same call: the same tag, fingerprint and deadline, so a rank that
// runs another algorithm, a dead rank or a timeout fails the phase where it is found, through the
// segment's and the transport's own checks, and the collective layer fails the context with it.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/patterns.h"
#include "gloo_lite/algorithms/subset_mesh.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/shm/collectives.h"
#include "gloo_lite/shm/host_segment.h"

namespace gloo_lite::algo {
namespace {

constexpr const char* kName = "hierarchical";

// The hosts of a context as every rank sees them (from the host identities exchanged at
// connect): hosts in order of their lowest rank, each host's ranks ascending.
struct Layout {
  std::vector<std::vector<int>> hosts;
  std::vector<std::string> names;  // each host's identity, in the order of `hosts`
  int host = 0;                    // this rank's host
  int local = 0;                   // this rank's index among its host's ranks
  size_t widest = 0;               // the most ranks on one host
  size_t narrowest = 0;            // the fewest
  // Every host's ranks are consecutive: a host's blocks of allgather and reduce_scatter are
  // then one contiguous run, which the message algorithms among the leaders need.
  bool contiguous = true;

  const std::vector<int>& mine() const { return hosts[host]; }
};

Layout layout_of(const std::vector<std::string>& names, int rank) {
  Layout layout;
  std::map<std::string, int> index;
  for (int r = 0; r < static_cast<int>(names.size()); ++r) {
    auto [found, added] = index.emplace(names[r], static_cast<int>(layout.hosts.size()));
    if (added) {
      layout.hosts.emplace_back();
      layout.names.push_back(names[r]);
    }
    std::vector<int>& ranks = layout.hosts[found->second];
    if (!ranks.empty() && ranks.back() != r - 1) layout.contiguous = false;
    if (r == rank) {
      layout.host = found->second;
      layout.local = static_cast<int>(ranks.size());
    }
    ranks.push_back(r);
  }
  layout.narrowest = layout.hosts.empty() ? 0 : layout.hosts.front().size();
  for (const auto& ranks : layout.hosts) {
    layout.widest = std::max(layout.widest, ranks.size());
    layout.narrowest = std::min(layout.narrowest, ranks.size());
  }
  return layout;
}

Layout layout_of(const ContextEngine& context, int rank) {
  return layout_of(context.hosts(), rank);
}

// The host index of `rank` and its index there.
std::pair<int, int> place_of(const Layout& layout, int rank) {
  for (int h = 0; h < static_cast<int>(layout.hosts.size()); ++h) {
    const auto& ranks = layout.hosts[h];
    auto at = std::find(ranks.begin(), ranks.end(), rank);
    if (at != ranks.end()) return {h, static_cast<int>(at - ranks.begin())};
  }
  return {0, 0};
}

bool supports(const Call& call) {
  // Only a context (or a cluster described to the tuner, which assumes the knobs allow the
  // segments) knows the hosts: a call's shape alone is never hierarchical.
  const std::vector<std::string>* names = hosts_of(call);
  if (names == nullptr || (call.context != nullptr && !call.context->shm_knobs_allow())) {
    return false;
  }
  if (static_cast<int>(names->size()) != call.size) return false;
  Layout layout = layout_of(*names, call.rank);
  if (layout.hosts.size() < 2 || layout.widest < 2) return false;
  // A segment's reduce_scatter step gives each rank chunk/L bytes: at least one element.
  if (shm_chunk_bytes() / layout.widest < call.element) return false;
  bool blocks =
      call.collective == Collective::kAllgather || call.collective == Collective::kReduceScatter;
  return !blocks || layout.contiguous;
}

// The model a network phase is chosen under: `model` with each host link shared by `sharing`
// such phases at once (the K lanes of a host each send through the same link, so each gets
// 1/K of its rate; one leader per host has it whole).
CostModel shared_links(const CostModel& model, int sharing) {
  CostModel shared = model;
  shared.net_beta = model.cross_beta() * std::max(sharing, 1);
  return shared;
}

// The cheapest message algorithm for a phase (never shm or hierarchical, which need hosts)
// under `model`: the estimate's and the run's must be the same, so both pass the call's
// (CostModel::for_call: the context's network figure in it).
const Algorithm& message_algorithm(const Call& phase, const CostModel& model,
                                   double* estimated = nullptr) {
  Ranked best = cheapest(phase, model, {"shm", kName});
  if (best.algorithm == nullptr) {
    throw InvalidArgument(std::string(collective_name(phase.collective)) +
                          ": no message algorithm for the hierarchical phase of " +
                          std::to_string(phase.size) + " ranks");
  }
  if (estimated) *estimated = best.estimate;
  return *best.algorithm;
}

// Buffers of one call's phases: grown, never shrunk, reused by the next call of this thread (a
// stream runs its calls one after another on one thread).
struct Buffers {
  std::vector<uint8_t> sum;   // a partial reduction: reduce's at a leader, a lane's slice
  std::vector<uint8_t> part;  // one host's part of reduce_scatter's result
};
uint8_t* grown(std::vector<uint8_t>& buffer, size_t bytes) {
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}
Buffers& buffers() {
  thread_local Buffers pool;
  return pool;
}

// One call's groups: its host's ranks and the leaders (one rank per host: the root on the
// root's host for broadcast and reduce, elsewhere the host's lowest rank).
class Phases {
 public:
  Phases(const Call& call, int root)
      : call_(call),
        layout_(layout_of(*call.context, call.rank)),
        here_(layout_.mine().size(), layout_.names[layout_.host]),
        local_(*call.mesh, layout_.mine(), layout_.local),
        leaders_(*call.mesh, leaders_for(root), layout_.host) {}

  const Layout& layout() const { return layout_; }
  int local_size() const { return local_.size(); }
  int hosts() const { return leaders_.size(); }
  bool leader() const { return leaders_.parent_rank(layout_.host) == call_.rank; }
  // This host's leader's index among its ranks.
  int local_leader() const {
    const auto& ranks = layout_.mine();
    return static_cast<int>(
        std::find(ranks.begin(), ranks.end(), leaders_.parent_rank(layout_.host)) - ranks.begin());
  }

  // The call as a phase on one of the groups: collective, root, counts and buffers are the
  // phase's; tag, fingerprint, deadline, type and op the call's. The phase's `hosts` are its
  // own ranks' (the tuner's cost of a phase counts what crosses hosts among them).
  Call on_host(Collective collective, int root) const {
    return phase(local_, here_, collective, root);
  }
  Call on_leaders(Collective collective, int root) const {
    return phase(leaders_, layout_.names, collective, root);
  }
  // ... on a lane (one rank per host, in host order), `mesh` (which must outlive the phase).
  Call on_lane(const SubsetMesh& mesh, Collective collective, int root) const {
    return phase(mesh, layout_.names, collective, root);
  }

  // Runs a phase of the host's ranks in their segment (created at the stream's first use), or,
  // where it cannot be created (every rank of the host got the same verdict), with a message
  // algorithm among them.
  void run_on_host(const Call& phase) const {
    std::string group = "host" + std::to_string(layout_.mine().front());
    HostSegment* segment =
        call_.context->host_segment(phase, shm_chunk_bytes(), group, layout_.mine());
    if (segment == nullptr) {
      message_algorithm(phase, CostModel::for_call(call_)).run(phase);
      return;
    }
    run_in_segment(phase, *segment, call_.rank, run_shm_steps);
  }
  // A phase among one rank per host: the leaders, or one of `sharing` lanes that run at once.
  void run_on_leaders(const Call& phase, int sharing = 1) const {
    message_algorithm(phase, shared_links(CostModel::for_call(call_), sharing)).run(phase);
  }

 private:
  std::vector<int> leaders_for(int root) const {
    std::vector<int> leaders;
    auto [root_host, unused] = place_of(layout_, root);
    (void)unused;
    for (int h = 0; h < static_cast<int>(layout_.hosts.size()); ++h) {
      leaders.push_back(h == root_host ? root : layout_.hosts[h].front());
    }
    return leaders;
  }
  Call phase(const SubsetMesh& mesh, const std::vector<std::string>& hosts, Collective collective,
             int root) const {
    Call phase = call_;
    phase.hosts = &hosts;
    phase.mesh = const_cast<SubsetMesh*>(&mesh);  // a view: its requests are the parent's
    phase.rank = mesh.rank();
    phase.size = mesh.size();
    phase.collective = collective;
    phase.root = root;
    phase.blocks.clear();
    phase.offsets.clear();
    phase.recv_blocks.clear();
    phase.recv_offsets.clear();
    return phase;
  }

  const Call& call_;
  Layout layout_;
  std::vector<std::string> here_;  // this host's identity, once per rank of it
  SubsetMesh local_;
  SubsetMesh leaders_;
};

void set_buffers(Call& phase, const uint8_t* input, transport::Memory* input_memory,
                 uint8_t* output, transport::Memory* output_memory) {
  phase.input = input;
  phase.input_memory = input_memory;
  phase.output = output;
  phase.output_memory = output_memory;
}

void set_blocks(Call& phase, std::vector<size_t> blocks) {
  phase.offsets.assign(blocks.size(), 0);
  for (size_t i = 1; i < blocks.size(); ++i)
    phase.offsets[i] = phase.offsets[i - 1] + blocks[i - 1];
  phase.blocks = std::move(blocks);
}

// Host h's elements in the layout of call.blocks (contiguous hosts): its first offset, its total.
std::pair<size_t, size_t> host_range(const Call& call, const Layout& layout, int h) {
  size_t first = call.offsets[layout.hosts[h].front()], total = 0;
  for (int r : layout.hosts[h]) total += call.blocks[r];
  return {first, total};
}

// The elements that [a, a + a_length) and [b, b + b_length) share.
size_t overlap(size_t a, size_t a_length, size_t b, size_t b_length) {
  size_t from = std::max(a, b), to = std::min(a + a_length, b + b_length);
  return to > from ? to - from : 0;
}

// The lanes of a call over `total` elements: K = the fewest ranks of any host; local rank i < K
// of every host carries slice i (elements [total*i/K, total*(i+1)/K)) in lane i, whose ranks
// are local rank i of each host, in host order. Ranks beyond K on a host have an empty slice.
// With K = 1 the lane is the hosts' lowest ranks: one leader per host.
struct Lanes {
  Lanes(const Layout& layout, size_t total)
      : count(static_cast<int>(layout.narrowest)), lane(layout.local), total(total) {
    slices.assign(layout.mine().size(), 0);
    for (int i = 0; i < count; ++i) slices[i] = begin(i + 1) - begin(i);
    first = begin(std::min(lane, count));
    mine = in_lane() ? slices[lane] : 0;
  }
  size_t begin(int i) const { return total * static_cast<size_t>(i) / count; }
  bool in_lane() const { return lane < count; }
  // This rank's lane as a mesh: its index there is its host's.
  SubsetMesh mesh(const Call& call, const Layout& layout) const {
    std::vector<int> ranks;
    for (const auto& host : layout.hosts) ranks.push_back(host[lane]);
    return SubsetMesh(*call.mesh, std::move(ranks), layout.host);
  }
  // The part of each host's run of blocks (allgather, reduce_scatter) in this rank's slice, in
  // host order: the blocks of the lane's allgatherv or reduce_scatterv over the slice.
  std::vector<size_t> runs_in_slice(const Call& call, const Layout& layout) const;
  // The part of each local rank's slice in [from, from + length) (this host's run).
  std::vector<size_t> slices_in(size_t from, size_t length) const {
    std::vector<size_t> parts(slices.size(), 0);
    for (int i = 0; i < count; ++i) parts[i] = overlap(begin(i), slices[i], from, length);
    return parts;
  }

  int count;
  int lane;
  size_t total;
  std::vector<size_t> slices;  // per local rank
  size_t first = 0;            // this rank's slice, in elements
  size_t mine = 0;
};

std::vector<size_t> Lanes::runs_in_slice(const Call& call, const Layout& layout) const {
  std::vector<size_t> runs;
  for (int h = 0; h < static_cast<int>(layout.hosts.size()); ++h) {
    auto [from, length] = host_range(call, layout, h);
    runs.push_back(overlap(first, mine, from, length));
  }
  return runs;
}

// `elements` at `data`, registered on their own: a phase's buffers start where their memory
// does.
struct Region {
  Region(const Call& call, uint8_t* data, size_t elements)
      : data(data), memory(call.mesh->register_memory(data, call.bytes(elements))) {}
  uint8_t* data;
  std::unique_ptr<transport::Memory> memory;
};

// allreduce in K lanes: the host's ranks reduce_scatter the vector in their segment into K
// slices, local rank i < K getting the host's sum of slice i; local rank i of every host
// allreduces slice i with the others over the network (the K lanes at once, each with 1/K of
// the bytes); the host's ranks allgather the slices. With K = 1 that is a reduce to the leader,
// an allreduce among the leaders and a broadcast.
void run_allreduce(const Call& call) {
  Phases phases(call, 0);
  const Layout& layout = phases.layout();
  Lanes lanes(layout, call.count);
  Region slice(call, call.output + call.bytes(lanes.first), lanes.mine);
  const bool local = phases.local_size() > 1;
  if (local) {
    Call reduce_scatter = phases.on_host(Collective::kReduceScatter, 0);
    set_blocks(reduce_scatter, lanes.slices);
    set_buffers(reduce_scatter, call.input, call.input_memory, slice.data, slice.memory.get());
    phases.run_on_host(reduce_scatter);
  } else {
    copy_own_block(call, call.input, call.output, call.count);
  }
  if (lanes.in_lane()) {
    SubsetMesh mesh = lanes.mesh(call, layout);
    Call allreduce = phases.on_lane(mesh, Collective::kAllreduce, 0);
    allreduce.count = lanes.mine;
    set_buffers(allreduce, slice.data, slice.memory.get(), slice.data, slice.memory.get());
    phases.run_on_leaders(allreduce, lanes.count);
  }
  if (local) {
    Call allgather = phases.on_host(Collective::kAllgather, 0);
    set_blocks(allgather, lanes.slices);
    set_buffers(allgather, call.output, call.output_memory, call.output, call.output_memory);
    phases.run_on_host(allgather);
  }
}

bool broadcast_in_lanes(const Call& call, const Layout& layout, const CostModel& model);

// broadcast, by leaders: the root to the other hosts' leaders, then every leader to its host.
// In lanes (for large vectors, where the model says so): the root to its host's ranks, lane i
// broadcasts slice i from the root's host to the other hosts, whose ranks allgather the slices.
void run_broadcast(const Call& call) {
  Phases phases(call, call.root);
  const Layout& layout = phases.layout();
  const int root_host = place_of(layout, call.root).first;
  const bool local = phases.local_size() > 1;
  if (broadcast_in_lanes(call, layout, CostModel::for_call(call))) {
    Lanes lanes(layout, call.count);
    Region slice(call, call.output + call.bytes(lanes.first), lanes.mine);
    if (local && layout.host == root_host) {
      Call broadcast = phases.on_host(Collective::kBroadcast, phases.local_leader());
      broadcast.count = call.count;
      phases.run_on_host(broadcast);
    }
    if (lanes.in_lane()) {
      SubsetMesh mesh = lanes.mesh(call, layout);
      Call broadcast = phases.on_lane(mesh, Collective::kBroadcast, root_host);
      broadcast.count = lanes.mine;
      set_buffers(broadcast, slice.data, slice.memory.get(), slice.data, slice.memory.get());
      phases.run_on_leaders(broadcast, lanes.count);
    }
    if (local && layout.host != root_host) {
      Call allgather = phases.on_host(Collective::kAllgather, 0);
      set_blocks(allgather, lanes.slices);
      phases.run_on_host(allgather);
    }
    return;
  }
  if (phases.leader()) {
    Call broadcast = phases.on_leaders(Collective::kBroadcast, root_host);
    broadcast.count = call.count;
    phases.run_on_leaders(broadcast);
  }
  if (local) {
    Call broadcast = phases.on_host(Collective::kBroadcast, phases.local_leader());
    broadcast.count = call.count;
    phases.run_on_host(broadcast);
  }
}

// reduce: every host's sum at its leader (the root on the root's host), then the leaders'
// reduce to the root.
void run_reduce(const Call& call) {
  Phases phases(call, call.root);
  const bool root = call.rank == call.root;
  const bool local = phases.local_size() > 1;
  // A leader's host sum: in the output at the root, in a buffer of its own at another leader of
  // a host of several ranks, the input itself at a leader alone on its host.
  const uint8_t* sum = root ? call.output : call.input;
  transport::Memory* sum_region = root ? call.output_memory : call.input_memory;
  std::unique_ptr<transport::Memory> sum_memory;
  if (local && phases.leader() && !root) {
    uint8_t* data = grown(buffers().sum, call.bytes(call.count));
    sum_memory = call.mesh->register_memory(data, call.bytes(call.count));
    sum = data;
    sum_region = sum_memory.get();
  }
  if (local) {
    Call reduce = phases.on_host(Collective::kReduce, phases.local_leader());
    reduce.count = call.count;
    if (phases.leader()) {
      set_buffers(reduce, call.input, call.input_memory, const_cast<uint8_t*>(sum), sum_region);
    }
    phases.run_on_host(reduce);
  } else if (root) {
    copy_own_block(call, call.input, call.output, call.count);
  }
  if (phases.leader() && phases.hosts() > 1) {
    Call reduce =
        phases.on_leaders(Collective::kReduce, place_of(phases.layout(), call.root).first);
    reduce.count = call.count;
    if (root) {
      set_buffers(reduce, call.output, call.output_memory, call.output, call.output_memory);
    } else {
      // As the API hands a reduce to a rank other than the root: no output.
      set_buffers(reduce, sum, sum_region, nullptr, call.output_memory);
    }
    phases.run_on_leaders(reduce);
  }
}

// allgather (in place: every rank's block is already in the output), in K lanes over the
// whole output: the host's blocks to each of its ranks (their run of the output), lane i
// allgathers slice i of the output among the hosts, each host giving the part of its run in
// slice i (the K lanes at once, 1/K of the bytes each), the host's ranks allgather the slices.
// With K = 1: an allgather of the hosts' runs among the leaders, then a broadcast in each host.
void run_allgather(const Call& call) {
  Phases phases(call, 0);
  const Layout& layout = phases.layout();
  const bool local = phases.local_size() > 1;
  Lanes lanes(layout, call.offsets.back() + call.blocks.back());
  if (local) {
    Call allgather = phases.on_host(Collective::kAllgather, 0);
    for (int r : layout.mine()) {
      allgather.blocks.push_back(call.blocks[r]);
      allgather.offsets.push_back(call.offsets[r]);
    }
    // (Offsets stay the call's: the host's blocks are one run of the output, which is what the
    // message algorithms take too, should the host have no segment.)
    phases.run_on_host(allgather);
  }
  if (lanes.in_lane()) {
    SubsetMesh mesh = lanes.mesh(call, layout);
    Call allgather = phases.on_lane(mesh, Collective::kAllgather, 0);
    set_blocks(allgather, lanes.runs_in_slice(call, layout));
    Region slice(call, call.output + call.bytes(lanes.first), lanes.mine);
    set_buffers(allgather, slice.data, slice.memory.get(), slice.data, slice.memory.get());
    phases.run_on_leaders(allgather, lanes.count);
  }
  if (local) {
    Call allgather = phases.on_host(Collective::kAllgather, 0);
    set_blocks(allgather, lanes.slices);
    phases.run_on_host(allgather);
  }
}

// reduce_scatter, in K lanes over the whole input: the host's ranks reduce_scatter it into K
// slices (local rank i < K gets the host's sum of slice i), lane i reduce_scatters slice i among
// the hosts, each host getting the part of its run of blocks in slice i, the host's ranks
// allgather their run's parts and each keeps its block. With K = 1: a reduce to the leader, a
// reduce_scatter of runs among the leaders, a broadcast of the run in each host.
void run_reduce_scatter(const Call& call) {
  Phases phases(call, 0);
  const Layout& layout = phases.layout();
  const bool local = phases.local_size() > 1;
  Lanes lanes(layout, call.offsets.back() + call.blocks.back());
  auto [first, part] = host_range(call, layout, layout.host);
  Buffers& pool = buffers();
  // This rank's slice summed over its host (the input itself on a host of one rank: K = 1, the
  // slice is the whole input).
  std::optional<Region> sum;
  if (local) sum.emplace(call, grown(pool.sum, call.bytes(lanes.mine)), lanes.mine);
  // The host's run of the result (the output itself on a host of one rank).
  uint8_t* run = local ? grown(pool.part, call.bytes(part)) : call.output;
  if (local) {
    Call reduce_scatter = phases.on_host(Collective::kReduceScatter, 0);
    set_blocks(reduce_scatter, lanes.slices);
    set_buffers(reduce_scatter, call.input, call.input_memory, sum->data, sum->memory.get());
    phases.run_on_host(reduce_scatter);
  }
  if (lanes.in_lane()) {
    SubsetMesh mesh = lanes.mesh(call, layout);
    Call reduce_scatter = phases.on_lane(mesh, Collective::kReduceScatter, 0);
    set_blocks(reduce_scatter, lanes.runs_in_slice(call, layout));
    // This host's part of the slice, at its place in the run.
    const size_t at = std::max(lanes.first, first) - first;
    Region out(call, run + call.bytes(at), reduce_scatter.blocks[layout.host]);
    if (local) {
      set_buffers(reduce_scatter, sum->data, sum->memory.get(), out.data, out.memory.get());
    } else {
      set_buffers(reduce_scatter, call.input, call.input_memory, out.data, out.memory.get());
    }
    phases.run_on_leaders(reduce_scatter, lanes.count);
  }
  if (local) {
    Region whole(call, run, part);
    Call allgather = phases.on_host(Collective::kAllgather, 0);
    set_blocks(allgather, lanes.slices_in(first, part));
    set_buffers(allgather, run, whole.memory.get(), run, whole.memory.get());
    phases.run_on_host(allgather);
    size_t own = call.offsets[call.rank] - first;
    if (call.blocks[call.rank] > 0) {
      std::memcpy(call.output, run + call.bytes(own), call.bytes(call.blocks[call.rank]));
    }
  }
}

// barrier: the host's ranks meet, the leaders meet, the leaders release their hosts.
void run_barrier(const Call& call) {
  Phases phases(call, 0);
  const bool local = phases.local_size() > 1;
  if (local) phases.run_on_host(phases.on_host(Collective::kBarrier, 0));
  if (phases.leader()) phases.run_on_leaders(phases.on_leaders(Collective::kBarrier, 0));
  if (local) phases.run_on_host(phases.on_host(Collective::kBarrier, 0));
}

// --- cost: the phases one after another, the widest host's segment phases at shm's cost and
// the leaders' phase at the estimate of the message algorithm it runs ---

Call shape(const Call& call, Collective collective, int size, size_t count) {
  Call phase;
  phase.size = size;
  phase.collective = collective;
  phase.type = call.type;
  phase.element = call.element;
  phase.op = call.op;
  phase.count = count;
  phase.ranks_per_core = call.ranks_per_core;
  return phase;
}

// The cost of the phases of `call`: segment phases on the widest host, network phases at the
// estimate of the cheapest message algorithm for one rank per host.
class PhaseCosts {
 public:
  PhaseCosts(const Call& call, const Layout& layout, const CostModel& model)
      : call_(call), layout_(layout), model_(model) {}

  double on_host(Collective collective, size_t count) const {
    return shm_cost(shape(call_, collective, static_cast<int>(layout_.widest), count), model_);
  }
  // A network phase among one rank per host: the leaders, or a lane of `sharing` at once.
  double on_network(Collective collective, size_t count, int sharing = 1) const {
    Call phase = shape(call_, collective, hosts(), count);
    phase.hosts = &layout_.names;
    return best(phase, sharing);
  }
  // A lane's phase of allgather or reduce_scatter: 1/K of each host's run of blocks.
  double on_lane_runs(Collective collective) const {
    Call phase = shape(call_, collective, hosts(), 0);
    phase.hosts = &layout_.names;
    std::vector<size_t> runs;
    for (int h = 0; h < hosts(); ++h)
      runs.push_back(host_range(call_, layout_, h).second / lanes());
    set_blocks(phase, std::move(runs));
    return best(phase, static_cast<int>(lanes()));
  }
  size_t elements() const { return call_.total_bytes() / call_.element; }
  size_t lanes() const { return layout_.narrowest; }

  double broadcast_by_leaders() const {
    return on_network(Collective::kBroadcast, elements()) +
           on_host(Collective::kBroadcast, elements());
  }
  double broadcast_in_lanes() const {
    if (lanes() < 2) return std::numeric_limits<double>::infinity();
    return on_host(Collective::kBroadcast, elements()) +
           on_network(Collective::kBroadcast, elements() / lanes(), static_cast<int>(lanes())) +
           on_host(Collective::kAllgather, elements());
  }

 private:
  int hosts() const { return static_cast<int>(layout_.hosts.size()); }
  double best(const Call& phase, int sharing) const {
    double estimated = 0;
    message_algorithm(phase, shared_links(model_, sharing), &estimated);
    return estimated;
  }

  const Call& call_;
  const Layout& layout_;
  const CostModel& model_;
};

bool broadcast_in_lanes(const Call& call, const Layout& layout, const CostModel& model) {
  PhaseCosts costs(call, layout, model);
  return costs.broadcast_in_lanes() < costs.broadcast_by_leaders();
}

double cost(const Call& call, const CostModel& model) {
  const std::vector<std::string>* names = hosts_of(call);
  if (names == nullptr) return std::numeric_limits<double>::infinity();
  Layout layout = layout_of(*names, call.rank);
  PhaseCosts costs(call, layout, model);
  const size_t n = costs.elements();
  const size_t own_host = n * layout.widest / call.size;  // about one host's share
  switch (call.collective) {
    case Collective::kAllreduce:
      return costs.on_host(Collective::kReduceScatter, n) +
             costs.on_network(Collective::kAllreduce, n / costs.lanes(),
                              static_cast<int>(costs.lanes())) +
             costs.on_host(Collective::kAllgather, n);
    case Collective::kBroadcast:
      return std::min(costs.broadcast_by_leaders(), costs.broadcast_in_lanes());
    case Collective::kReduce:
      return costs.on_host(Collective::kReduce, n) + costs.on_network(Collective::kReduce, n);
    case Collective::kAllgather:
      return costs.on_host(Collective::kAllgather, own_host) +
             costs.on_lane_runs(Collective::kAllgather) + costs.on_host(Collective::kAllgather, n);
    case Collective::kReduceScatter:
      return costs.on_host(Collective::kReduceScatter, n) +
             costs.on_lane_runs(Collective::kReduceScatter) +
             costs.on_host(Collective::kAllgather, own_host);
    default:
      return 2 * costs.on_host(Collective::kBarrier, 0) + costs.on_network(Collective::kBarrier, 0);
  }
}

// The leaders' messages are in the leaders' phase estimate (its host term included).
double messages(const Call&) { return 0; }

}  // namespace

std::vector<Algorithm> hierarchical_algorithms() {
  return {
      {kName, Collective::kAllreduce, supports, cost, messages, run_allreduce},
      {kName, Collective::kBroadcast, supports, cost, messages, run_broadcast},
      {kName, Collective::kReduce, supports, cost, messages, run_reduce},
      {kName, Collective::kAllgather, supports, cost, messages, run_allgather},
      {kName, Collective::kReduceScatter, supports, cost, messages, run_reduce_scatter},
      {kName, Collective::kBarrier, supports, cost, messages, run_barrier},
  };
}

}  // namespace gloo_lite::algo
