// Direct algorithms: every rank exchanges with every other rank in one round, all messages
// posted at once. Under the single-port model (a rank's port carries one message at a time;
// Thakur, Rabenseifner, Gropp, IJHPCA 19(1), 2005) that costs P-1 steps, so they win only
// for tiny P or latency-bound sizes; their merit is one round of dependency, no intermediate
// hops and no forwarding. docs/algorithms.md derives the costs below.
#include <deque>
#include <optional>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/host_links.h"
#include "gloo_lite/algorithms/patterns.h"

namespace gloo_lite::algo {
namespace {

// Direct allreduce and reduce_scatter keep all P-1 incoming vectors at once; beyond this much
// scratch the logarithmic and ring algorithms are faster anyway and memory matters more.
constexpr size_t kScratchLimit = size_t{8} << 20;

// Peers in the order (rank + 1, rank + 2, ...), so that not every rank talks to rank 0 first.
int peer_at(const Call& call, int k) { return (call.rank + k) % call.size; }

// Index of peer j among this rank's P-1 receive slots.
size_t slot_of(const Call& call, int j) { return static_cast<size_t>(j < call.rank ? j : j - 1); }

size_t largest_block(const Call& call) {
  size_t largest = 0;
  for (size_t block : call.blocks) largest = std::max(largest, block);
  return largest;
}

// Sends `own` to every peer, receives x_j from every peer into scratch, and reduces in rank order
// into `out` as the receives complete. Shared by allreduce (the whole vector) and reduce_scatter
// (block j goes to rank j).
template <typename SendOffset>
void exchange_and_reduce(const Call& call, size_t elements, const uint8_t* own, uint8_t* out,
                         SendOffset send_offset) {
  const size_t slot = round_up(call.bytes(elements), 64);
  std::optional<Scratch> scratch;
  if (elements > 0) scratch.emplace(call, (call.size - 1) * slot);
  std::deque<Step> receives;
  for (int j = 0; j < call.size; ++j) receives.emplace_back(call);
  Step sends(call);
  for (int k = 1; k < call.size; ++k) {
    int peer = peer_at(call, k);
    if (elements > 0) {
      receives[peer].recv(peer, scratch->memory(), slot_of(call, peer) * slot,
                          call.bytes(elements));
    }
    auto [offset, bytes] = send_offset(peer);
    if (bytes > 0) sends.send(peer, *call.input_memory, offset, bytes);
  }
  if (call.input == call.output) {
    // In place: writing the result must not race with sends still reading the input, and an
    // in-place reduce_scatter (result at the start of the buffer, MPI_IN_PLACE) may overlap its
    // own block; moving that block to the result first keeps the rank-order reduction safe.
    sends.wait();
    if (own != out && elements > 0) std::memmove(out, own, call.bytes(elements));
    own = out;
  }
  if (elements > 0) {
    reduce_in_rank_order(
        call, out, own, call.rank, elements,
        [&](int j) { return scratch->data() + slot_of(call, j) * slot; },
        [&](int j) { receives[j].wait(); });
  }
  sends.wait();
}

void run_allreduce(const Call& call) {
  if (call.count == 0) return;
  size_t bytes = call.bytes(call.count);
  exchange_and_reduce(call, call.count, call.input, call.output, [&](int) {
    return std::pair<size_t, size_t>{0, bytes};
  });
}

void run_reduce_scatter(const Call& call) {
  const uint8_t* own = call.input + call.bytes(call.offsets[call.rank]);
  exchange_and_reduce(call, call.blocks[call.rank], own, call.output, [&](int peer) {
    return std::pair<size_t, size_t>{call.bytes(call.offsets[peer]), call.bytes(call.blocks[peer])};
  });
}

void run_allgather(const Call& call) {
  // In place: this rank's block is already at offsets[rank] of the output.
  Step step(call);
  size_t own = call.bytes(call.blocks[call.rank]);
  for (int k = 1; k < call.size; ++k) {
    int peer = peer_at(call, k);
    size_t theirs = call.bytes(call.blocks[peer]);
    if (theirs > 0) {
      step.recv(peer, *call.output_memory, call.bytes(call.offsets[peer]), theirs);
    }
    if (own > 0) step.send(peer, *call.output_memory, call.bytes(call.offsets[call.rank]), own);
  }
  step.wait();
}

void run_gather(const Call& call) {
  Step step(call);
  if (call.rank != call.root) {
    size_t bytes = call.bytes(call.blocks[call.rank]);
    if (bytes > 0) step.send(call.root, *call.input_memory, 0, bytes);
    step.wait();
    return;
  }
  for (int k = 1; k < call.size; ++k) {
    int peer = peer_at(call, k);
    size_t bytes = call.bytes(call.blocks[peer]);
    if (bytes > 0) step.recv(peer, *call.output_memory, call.bytes(call.offsets[peer]), bytes);
  }
  if (call.input != call.output) {
    copy_own_block(call, call.input, call.output + call.bytes(call.offsets[call.rank]),
                   call.blocks[call.rank]);
  }
  step.wait();
}

void run_scatter(const Call& call) {
  Step step(call);
  if (call.rank != call.root) {
    size_t bytes = call.bytes(call.blocks[call.rank]);
    if (bytes > 0) step.recv(call.root, *call.output_memory, 0, bytes);
    step.wait();
    return;
  }
  for (int k = 1; k < call.size; ++k) {
    int peer = peer_at(call, k);
    size_t bytes = call.bytes(call.blocks[peer]);
    if (bytes > 0) step.send(peer, *call.input_memory, call.bytes(call.offsets[peer]), bytes);
  }
  if (call.input != call.output) {
    copy_own_block(call, call.input + call.bytes(call.offsets[call.rank]), call.output,
                   call.blocks[call.rank]);
  }
  step.wait();
}

void run_broadcast(const Call& call) {
  if (call.count == 0) return;
  Step step(call);
  size_t bytes = call.bytes(call.count);
  if (call.rank == call.root) {
    for (int k = 1; k < call.size; ++k) step.send(peer_at(call, k), *call.output_memory, 0, bytes);
  } else {
    step.recv(call.root, *call.output_memory, 0, bytes);
  }
  step.wait();
}

void run_alltoall(const Call& call) {
  AlltoallBlocks blocks(call);
  Step step(call);
  for (int k = 1; k < call.size; ++k) {
    // Receive from the rank that sends to us at the same k, so the load stays spread.
    blocks.recv(step, (call.rank - k + call.size) % call.size);
    blocks.send(step, peer_at(call, k));
  }
  blocks.copy_own();
  step.wait();
}

// A zero-byte message to and from every peer: a rank leaves once every rank has entered.
void run_barrier(const Call& call) {
  Scratch empty(call, 0);
  Step step(call);
  for (int k = 1; k < call.size; ++k) {
    step.recv((call.rank - k + call.size) % call.size, empty.memory(), 0, 0);
    step.send(peer_at(call, k), empty.memory(), 0, 0);
  }
  step.wait();
}

bool supports_any(const Call&) { return true; }
bool supports_allreduce(const Call& call) {
  return static_cast<size_t>(call.size - 1) * call.bytes(call.count) <= kScratchLimit;
}
bool supports_reduce_scatter(const Call& call) {
  return static_cast<size_t>(call.size - 1) * call.bytes(largest_block(call)) <= kScratchLimit;
}

double steps(const Call& call) { return call.size - 1; }
double n_bytes(const Call& call) { return static_cast<double>(call.total_bytes()); }
double share(const Call& call) { return (call.size - 1.0) / call.size * n_bytes(call); }

// Every send is posted at once and waits for no receipt: P-1 steps on the port, one round of
// dependency depth (latency()).
double direct_latency(const Call& call, const CostModel& m) { return latency(steps(call), 1, m); }

// Across hosts (host_links.h) every message is in flight at once: the busiest host link
// carries everything its ranks send to (or receive from) other hosts, the busiest port
// everything its rank sends or receives; the P-1 steps' latency is the cross-host one.
// `bytes(from, to)`: what rank `from` sends to rank `to` (0: nothing but the message).
template <typename Bytes>
std::optional<double> across(const Call& call, const CostModel& m, Bytes bytes) {
  HostLinks links(call, Partners::kChanging);
  if (!links.spans()) return std::nullopt;
  for (int from = 0; from < call.size; ++from) {
    for (int to = 0; to < call.size; ++to) links.send(from, to, bytes(from, to));
  }
  return latency(steps(call), 1, links.latency_model(m)) + links.transfer(m);
}
double block_to(const Call& call, int to) { return call.bytes(call.blocks[to]); }
double block_of(const Call& call, int from) { return call.bytes(call.blocks[from]); }

// allreduce: P-1 steps, (P-1) * n on the wire and reduced.
double cost_allreduce(const Call& call, const CostModel& m) {
  double reduced = steps(call) * n_bytes(call) * m.gamma;
  if (auto t = across(call, m, [&](int, int) { return n_bytes(call); })) return *t + reduced;
  return direct_latency(call, m) + steps(call) * n_bytes(call) * m.beta + reduced;
}
// reduce_scatter: P-1 steps, (P-1)/P * n on the wire and reduced.
double cost_reduce_scatter(const Call& call, const CostModel& m) {
  auto t = across(call, m, [&](int, int to) { return block_to(call, to); });
  if (t) return *t + share(call) * m.gamma;
  return direct_latency(call, m) + share(call) * (m.beta + m.gamma);
}
// allgather, gather, scatter, alltoall: P-1 steps, (P-1)/P * n on the wire. Across hosts each
// has its own pattern: allgather sends each block to every rank, gather to the root, scatter
// and alltoall block j to rank j (alltoallv: this rank's counts stand for every rank's).
double cost_blocks_on_one_host(const Call& call, const CostModel& m) {
  return direct_latency(call, m) + share(call) * m.beta;
}
double cost_allgather(const Call& call, const CostModel& m) {
  auto t = across(call, m, [&](int from, int) { return block_of(call, from); });
  return t ? *t : cost_blocks_on_one_host(call, m);
}
double cost_gather(const Call& call, const CostModel& m) {
  auto t = across(call, m,
                  [&](int from, int to) { return to == call.root ? block_of(call, from) : 0.0; });
  return t ? *t : cost_blocks_on_one_host(call, m);
}
double cost_scatter(const Call& call, const CostModel& m) {
  auto t = across(call, m,
                  [&](int from, int to) { return from == call.root ? block_to(call, to) : 0.0; });
  return t ? *t : cost_blocks_on_one_host(call, m);
}
double cost_alltoall(const Call& call, const CostModel& m) {
  auto t = across(call, m, [&](int, int to) { return block_to(call, to); });
  return t ? *t : cost_blocks_on_one_host(call, m);
}
// broadcast: P-1 steps, (P-1) * n on the wire (the root sends n to each peer).
double cost_broadcast(const Call& call, const CostModel& m) {
  auto t = across(call, m, [&](int from, int) { return from == call.root ? n_bytes(call) : 0.0; });
  return t ? *t : direct_latency(call, m) + steps(call) * n_bytes(call) * m.beta;
}
// barrier: P-1 steps, nothing on the wire.
double cost_barrier(const Call& call, const CostModel& m) {
  auto t = across(call, m, [](int, int) { return 0.0; });
  return t ? *t : direct_latency(call, m);
}

// Messages: every rank sends to every peer, except in the rooted collectives, where only the
// root talks to the others and each of them once.
double to_every_peer(const Call& call) { return call.size - 1.0; }
double one_per_rank(const Call& call) { return (call.size - 1.0) / call.size; }

}  // namespace

std::vector<Algorithm> direct_algorithms() {
  return {
      {"direct", Collective::kAllreduce, supports_allreduce, cost_allreduce, to_every_peer,
       run_allreduce},
      {"direct", Collective::kReduceScatter, supports_reduce_scatter, cost_reduce_scatter,
       to_every_peer, run_reduce_scatter},
      {"direct", Collective::kAllgather, supports_any, cost_allgather, to_every_peer,
       run_allgather},
      {"direct", Collective::kGather, supports_any, cost_gather, one_per_rank, run_gather},
      {"direct", Collective::kScatter, supports_any, cost_scatter, one_per_rank, run_scatter},
      {"direct", Collective::kBroadcast, supports_any, cost_broadcast, one_per_rank, run_broadcast},
      {"direct", Collective::kAlltoall, supports_any, cost_alltoall, to_every_peer, run_alltoall},
      {"direct", Collective::kBarrier, supports_any, cost_barrier, to_every_peer, run_barrier},
  };
}

}  // namespace gloo_lite::algo
