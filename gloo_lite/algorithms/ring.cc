// Ring algorithms (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations", JPDC 2009): every rank talks only to its neighbours, and each link carries
// (P-1)/P of the data per phase, which is optimal in bandwidth.
//
// One loop serves allreduce, reduce_scatter and allgather. At step t rank r sends block
// (r-t-shift) mod P to its right neighbour and receives block (r-t-1-shift) mod P from its left
// one. During the reduce steps a received block is combined with the rank's own input block;
// during the gather steps it is final and lands directly in the output. Allreduce is P-1 reduce
// steps then P-1 gather steps; reduce_scatter is the reduce steps alone (shift 1, so rank r ends
// with block r); allgather is the gather steps alone.
//
// Blocks are cut into chunks and a chunk is forwarded as soon as it is reduced, so reduction
// overlaps the wire and step t+1 starts before step t ends. Receives are posted one step
// ahead, so payloads land straight in their buffers rather than in the unexpected queue.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/host_links.h"

namespace gloo_lite::algo {
namespace {

int mod(int a, int p) { return ((a % p) + p) % p; }

struct Range {
  size_t begin;   // elements
  size_t length;  // elements
};

// Block b when `count` elements are cut into P nearly equal blocks.
Range even_block(size_t count, int blocks, int b) {
  size_t base = count / blocks;
  size_t extra = count % blocks;
  size_t begin = b * base + std::min<size_t>(b, extra);
  return {begin, base + (static_cast<size_t>(b) < extra ? 1 : 0)};
}

// A place holding one block: registered memory plus the byte offset of the block's start.
struct Place {
  transport::Memory* memory;
  size_t offset;
  uint8_t* pointer() const { return memory->data() + offset; }
};

struct RingPlan {
  int reduce_steps = 0;
  int gather_steps = 0;
  int shift = 0;
  std::vector<Range> blocks;
  // This rank's own contribution to block b (reduce steps) or the block itself (gather).
  std::function<Place(int b)> own;
  // Where the block received at step t goes; unset for reduce_scatter, whose partial sums
  // live in pooled scratch and whose last block goes to the output.
  std::function<Place(int t, int b)> target;
};

// Pipelining granularity: chunks of at least `min_bytes`, at most `max_chunks` per block (0: no
// limit). In the ring loop every block travels P-1 hops anyway, so 8 chunks give the overlap and
// more only add per-message work. The broadcast chain fills its pipeline chunk by chunk, so it
// has no limit; its 1 MiB chunks measured 1.3-1.5x faster than 256 KiB ones at P = 4 and 8 on
// 2 cores (1 and 16 MiB): every chunk is a rendezvous message, whose handshake costs every hop
// a wake-up, and with ranks outnumbering cores those dominate.
struct ChunkRule {
  size_t min_bytes;
  size_t max_chunks;
};
constexpr ChunkRule kLoopChunks{size_t{256} << 10, 8};
constexpr ChunkRule kChainChunks{size_t{1} << 20, 0};
size_t chunk_elements(const Call& call, size_t block_elements, ChunkRule rule) {
  size_t floor = std::max<size_t>(1, rule.min_bytes / call.element);
  if (rule.max_chunks == 0) return floor;
  return std::max(floor, (block_elements + rule.max_chunks - 1) / rule.max_chunks);
}

size_t chunk_count(const Call& call, size_t block_elements, ChunkRule rule = kLoopChunks) {
  size_t per = chunk_elements(call, block_elements, rule);
  return std::max<size_t>(1, (block_elements + per - 1) / per);
}

// Messages of the ring loop: every rank sends each step's block, in chunks. Blocks differ by at
// most an element for allreduce; for the v-variants the average block stands in.
double loop_messages(const Call& call, int steps, size_t block_elements) {
  return steps * static_cast<double>(chunk_count(call, block_elements));
}
size_t average_block(const Call& call) {
  return call.blocks.empty() ? call.count / call.size
                             : call.total_bytes() / call.element / call.size;
}

// Chunks of a block, at least one (an empty block still sends one empty message, which keeps
// both neighbours' message sequences identical without special cases).
std::vector<Range> chunks_of(const Call& call, Range block, ChunkRule rule = kLoopChunks) {
  std::vector<Range> chunks;
  size_t per = chunk_elements(call, block.length, rule);
  for (size_t done = 0; done < block.length || chunks.empty(); done += per) {
    chunks.push_back({done, std::min(per, block.length - std::min(done, block.length))});
  }
  return chunks;
}

void ring_loop(const Call& call, const RingPlan& plan) {
  const int p = call.size;
  const int r = call.rank;
  const int right = mod(r + 1, p);
  const int left = mod(r - 1, p);
  const int steps = plan.reduce_steps + plan.gather_steps;
  const bool partials = !plan.target;
  size_t max_block = 0;
  for (const Range& block : plan.blocks) max_block = std::max(max_block, block.length);
  // Slots 0-1: receives of this step and the next (posted ahead), during reduce steps.
  // Slots 2-3: reduce_scatter's partial sums, alternating by step.
  const size_t slot_bytes = call.bytes(max_block);
  Scratch scratch(call, plan.reduce_steps > 0 ? (partials ? 4 : 2) * slot_bytes : 0);
  Step step(call);
  auto send_block = [&](int t) { return mod(r - t - plan.shift, p); };
  auto recv_block = [&](int t) { return mod(r - t - 1 - plan.shift, p); };
  auto slot = [&](int index) { return Place{&scratch.memory(), index * slot_bytes}; };
  // In place, the caller's result area (the buffer's start) may overlap input blocks that are
  // still being sent: the last block then waits in scratch until every send has left.
  const bool final_in_scratch = partials && call.input == call.output;
  auto target = [&](int t, int b) {
    if (!partials) return plan.target(t, b);
    bool last = t + 1 == steps;
    return last && !final_in_scratch ? Place{call.output_memory, 0} : slot(2 + t % 2);
  };

  std::vector<std::vector<transport::RequestPtr>> receives(steps);
  std::vector<std::vector<transport::RequestPtr>> sends_from(steps);
  auto post_receives = [&](int t) {
    int b = recv_block(t);
    Place into = t < plan.reduce_steps ? slot(t % 2) : target(t, b);
    for (const Range& chunk : chunks_of(call, plan.blocks[b])) {
      receives[t].push_back(step.recv(left, *into.memory, into.offset + call.bytes(chunk.begin),
                                      call.bytes(chunk.length)));
    }
  };
  auto send_chunk = [&](Place from, Range chunk) {
    return step.send(right, *from.memory, from.offset + call.bytes(chunk.begin),
                     call.bytes(chunk.length));
  };

  // Without partial sums the gather steps receive straight into the result, into blocks this
  // rank sent from earlier (its own at the start, each received block one step later). The
  // network's causality already orders them (the block comes back only after the peer read
  // it), but nothing in this process does: a send a transport thread finishes may still read
  // the block when the receive writes it. So a receive into a block waits for those sends
  // first; they are long done, it costs no time (ThreadSanitizer saw the unordered pair).
  std::vector<transport::RequestPtr> first_sends;
  auto wait_sends_from_block = [&](int b, int before) {
    if (partials) return;
    if (send_block(0) == b) {
      for (const auto& request : first_sends) step.wait(request);
    }
    for (int u = 0; u < before; ++u) {
      if (recv_block(u) != b) continue;
      for (const auto& request : sends_from[u]) step.wait(request);
    }
  };
  post_receives(0);
  for (const Range& chunk : chunks_of(call, plan.blocks[send_block(0)])) {
    first_sends.push_back(send_chunk(plan.own(send_block(0)), chunk));
  }
  for (int t = 0; t < steps; ++t) {
    if (t + 1 < steps) {
      if (t + 1 >= plan.reduce_steps) wait_sends_from_block(recv_block(t + 1), t + 1);
      post_receives(t + 1);
    }
    // A partial-sum slot is rewritten two steps later: its sends must have left by then.
    if (partials && t >= 2) {
      for (const auto& request : sends_from[t - 2]) step.wait(request);
    }
    int b = recv_block(t);
    Place result = target(t, b);
    std::vector<Range> chunks = chunks_of(call, plan.blocks[b]);
    for (size_t c = 0; c < chunks.size(); ++c) {
      const Range& chunk = chunks[c];
      step.wait(receives[t][c]);
      if (t < plan.reduce_steps) {
        size_t at = call.bytes(chunk.begin);
        call.reduce_to(result.pointer() + at, plan.own(b).pointer() + at,
                       slot(t % 2).pointer() + at, chunk.length);
      }
      // What arrived (and was reduced) at step t is what goes out at step t+1.
      if (t + 1 < steps) sends_from[t].push_back(send_chunk(result, chunk));
    }
  }
  step.wait();
  if (final_in_scratch) {
    std::memmove(call.output, target(steps - 1, call.rank).pointer(),
                 call.bytes(plan.blocks[call.rank].length));
  }
}

// ---- allreduce ----
// Across hosts (host_links.h) every step of the loop is the same: each rank sends one block
// to the next, and the ring's edges that leave a host share its link (one per host on a ring
// laid out host by host, whatever the ranks per host): steps * links.step().
HostLinks loop_links(const Call& call, double block) {
  HostLinks links(call, Partners::kFixed);
  links.every_rank([&](int r) { return std::make_pair((r + 1) % call.size, block); });
  return links;
}

double allreduce_cost(const Call& call, const CostModel& m) {
  double p = call.size;
  double n = call.bytes(call.count);
  if (HostLinks links = loop_links(call, n / p); links.spans()) {
    return 2 * (p - 1) * links.step(m) + (p - 1) / p * n * m.gamma;
  }
  return 2 * (p - 1) * m.alpha + 2 * (p - 1) / p * n * m.beta + (p - 1) / p * n * m.gamma;
}
double allreduce_messages(const Call& call) {
  return loop_messages(call, 2 * (call.size - 1), call.count / call.size);
}
void allreduce_run(const Call& call) {
  RingPlan plan;
  plan.reduce_steps = call.size - 1;
  plan.gather_steps = call.size - 1;
  for (int b = 0; b < call.size; ++b) plan.blocks.push_back(even_block(call.count, call.size, b));
  plan.own = [&](int b) { return Place{call.input_memory, call.bytes(plan.blocks[b].begin)}; };
  plan.target = [&](int, int b) {
    return Place{call.output_memory, call.bytes(plan.blocks[b].begin)};
  };
  ring_loop(call, plan);
}

// ---- reduce_scatter ----
double reduce_scatter_cost(const Call& call, const CostModel& m) {
  double p = call.size;
  double n = call.total_bytes();
  if (HostLinks links = loop_links(call, n / p); links.spans()) {
    return (p - 1) * links.step(m) + (p - 1) / p * n * m.gamma;
  }
  return (p - 1) * m.alpha + (p - 1) / p * n * (m.beta + m.gamma);
}
double block_messages(const Call& call) {
  return loop_messages(call, call.size - 1, average_block(call));
}
void reduce_scatter_run(const Call& call) {
  RingPlan plan;
  plan.reduce_steps = call.size - 1;
  plan.shift = 1;  // the last reduce step then delivers block r to rank r
  for (int b = 0; b < call.size; ++b) plan.blocks.push_back({0, call.blocks[b]});
  plan.own = [&](int b) { return Place{call.input_memory, call.bytes(call.offsets[b])}; };
  ring_loop(call, plan);
}

// ---- allgather (in place: own block already at its offset) ----
double allgather_cost(const Call& call, const CostModel& m) {
  double p = call.size;
  if (HostLinks links = loop_links(call, call.total_bytes() / p); links.spans()) {
    return (p - 1) * links.step(m);
  }
  return (p - 1) * m.alpha + (p - 1) / p * call.total_bytes() * m.beta;
}
void allgather_run(const Call& call) {
  RingPlan plan;
  plan.gather_steps = call.size - 1;
  for (int b = 0; b < call.size; ++b) plan.blocks.push_back({0, call.blocks[b]});
  plan.own = [&](int b) { return Place{call.output_memory, call.bytes(call.offsets[b])}; };
  plan.target = [&](int, int b) { return Place{call.output_memory, call.bytes(call.offsets[b])}; };
  ring_loop(call, plan);
}

// ---- broadcast: a pipelined chain root -> root+1 -> ... ----
// Each rank receives the vector once and forwards it chunk by chunk, so for large vectors the
// time approaches n*beta regardless of P (a binomial tree needs log2(P)*n*beta).
// The chain's chunk. On one host 1 MiB (kChainChunks). Across hosts the link bounds the chain,
// and its fill (the last rank gets its first chunk P - 2 hops after the root's first send) is
// what a large chunk costs: a chunk of c bytes costs about (P - 2 + n / c) * (a + c * beta),
// least at c = sqrt(n * a / ((P - 2) * beta)), within 64 KiB..1 MiB (8 hosts at 200 Mbit/s,
// 4 MiB: 64 KiB, 0.63 -> 0.95 of the link: docs/algorithms.md). Every rank must cut the same
// chunks, so only agreed figures enter: the network's beta (the probe's, or the knob that
// every rank's connect record carries; 0, unknown: 1 MiB) and a fixed a, the default
// cross-host latency plus per-message overhead, not the process's own latency knobs.
constexpr double kChainChunkLatency = 65e-6;
size_t chain_chunk_bytes(const Call& call, double net_beta) {
  if (call.size < 3 || net_beta <= 0 || !HostLinks(call, Partners::kFixed).spans()) {
    return kChainChunks.min_bytes;
  }
  double n = call.bytes(call.count);
  double best = std::sqrt(n * kChainChunkLatency / ((call.size - 2) * net_beta));
  return static_cast<size_t>(std::clamp(best, double(64 << 10), double(kChainChunks.min_bytes)));
}
ChunkRule chain_chunks(const Call& call, const CostModel& m) {
  return {chain_chunk_bytes(call, m.net_beta), 0};
}

double broadcast_cost(const Call& call, const CostModel& m) {
  double n = call.bytes(call.count);
  ChunkRule rule = chain_chunks(call, m);
  double chunk = std::min<double>(n, rule.min_bytes);
  double chunks = std::max(1.0, n / rule.min_bytes);
  double steps = call.size - 2 + chunks;
  // Across hosts: each chunk takes one step of the full pipeline, in which every rank but the
  // last forwards one chunk and the chain's edges that leave a host share its link; the fill
  // (P - 2 steps) costs its latency only. Its bytes are not charged: the root is free once its
  // chunks are out, so back-to-back broadcasts overlap one's fill with the previous one's
  // drain (measured, 2,2,1 at 200 Mbit/s, 1 MiB, one chunk: 47.6 ms, 1.13x one chunk's time
  // on a link, where charging the fill's two crossing hops predicts 2x).
  HostLinks links(call, Partners::kFixed);
  int last = mod(call.root - 1, call.size);
  links.every_rank(
      [&](int r) { return std::make_pair(r == last ? -1 : (r + 1) % call.size, chunk); });
  if (links.spans()) {
    return steps * links.latency_model(m).alpha + chunks * links.transfer(m);
  }
  return steps * m.alpha + (n + (call.size - 2) * chunk) * m.beta;
}
// Every rank but the last of the chain forwards every chunk.
double broadcast_messages(const Call& call) {
  double p = call.size;
  return (p - 1) / p * chunk_count(call, call.count, chain_chunks(call, CostModel::for_call(call)));
}
void broadcast_run(const Call& call) {
  int p = call.size;
  int v = mod(call.rank - call.root, p);
  int prev = mod(call.rank - 1, p);
  int next = mod(call.rank + 1, p);
  Step step(call);
  std::vector<Range> chunks =
      chunks_of(call, {0, call.count}, chain_chunks(call, CostModel::for_call(call)));
  std::vector<transport::RequestPtr> receives;
  if (v > 0) {
    for (const Range& chunk : chunks) {
      receives.push_back(
          step.recv(prev, *call.output_memory, call.bytes(chunk.begin), call.bytes(chunk.length)));
    }
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (v > 0) step.wait(receives[c]);
    if (v < p - 1) {
      step.send(next, *call.output_memory, call.bytes(chunks[c].begin),
                call.bytes(chunks[c].length));
    }
  }
  step.wait();
}

bool always(const Call&) { return true; }

}  // namespace

std::vector<Algorithm> ring_algorithms() {
  return {
      {"ring", Collective::kAllreduce, always, allreduce_cost, allreduce_messages, allreduce_run},
      {"ring", Collective::kReduceScatter, always, reduce_scatter_cost, block_messages,
       reduce_scatter_run},
      {"ring", Collective::kAllgather, always, allgather_cost, block_messages, allgather_run},
      {"ring", Collective::kBroadcast, always, broadcast_cost, broadcast_messages, broadcast_run},
  };
}

}  // namespace gloo_lite::algo
