// Halving-doubling allreduce (Rabenseifner, "Optimization of collective reduction operations",
// ICCS 2004; Thakur, Rabenseifner & Gropp, IJHPCA 2005, section 4): a reduce-scatter by
// recursive halving (log2 P steps, each exchanging half of the remaining range with the rank at
// distance P/2, P/4, ...) followed by an allgather by recursive doubling in reverse order. It
// moves as few bytes as the ring in only 2 log2 P steps. Across hosts the distances are taken
// in another order (halving_distances) so that only the small late halvings cross a link.
//
// Recursive doubling allreduce exchanges the whole vector at every step (log2 P steps): fewest
// steps, most bytes, for small messages.
//
// Non-power-of-two P: with P' the largest power of two below P and rem = P - P', the first
// 2*rem ranks pair up; each even one sends its vector to its odd partner (which reduces it) and
// sits out, receiving the result at the end. The remaining P' ranks run the power-of-two
// algorithm. This costs 2 extra steps and 2n extra bytes on the critical path, and keeps every
// other rank's traffic unchanged.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/host_links.h"
#include "gloo_lite/context_engine.h"

namespace gloo_lite::algo {
namespace {

// Chunks of an exchange between ranks of one host (shared memory, or TCP on one machine).
constexpr size_t kChunkBytes = 256 * 1024;

// Elements per chunk of an exchange: each partner reduces a chunk as soon as it lands. Across
// hosts the chunks are rendezvous messages like any other: the TCP transport sends a
// clear-to-send ahead of payload already queued (docs/transport.md), so partners that send to
// each other at once keep both directions of the link busy.
size_t chunk_elements(const Call& call) { return std::max<size_t>(1, kChunkBytes / call.element); }

struct Fold {
  int p2;         // P': ranks taking part in the core algorithm
  int rem;        // P - P'
  int virt;       // this rank's index among the P' (-1 when it sits out)
  int partner;    // fold partner (-1 if none)
  bool sits_out;  // an even rank among the first 2*rem

  explicit Fold(const Call& call) {
    p2 = 1;
    while (p2 * 2 <= call.size) p2 *= 2;
    rem = call.size - p2;
    int q = call.rank;
    sits_out = q < 2 * rem && q % 2 == 0;
    partner = q < 2 * rem ? (q % 2 == 0 ? q + 1 : q - 1) : -1;
    virt = sits_out ? -1 : (q < 2 * rem ? q / 2 : q - rem);
  }
  int real(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
};

// The distances of the halving steps, the first (which exchanges half the vector) first. Any
// order of the bits of the virtual rank halves the range correctly, as long as the doubling
// undoes it in reverse. On one host it is Rabenseifner's, P'/2 down to 1. Across hosts the
// distances whose partners share a host most often come first, so that the large exchanges stay
// inside hosts: on 2 hosts of ranks 0-3 and 4-7 the order is 2, 1, 4, and only the last halving
// (n/8 per rank) crosses, n in all over each host link with the doubling, what the hierarchy
// sends; P'/2 first would send 4n (measured 2026-12-08: docs/benchmarking.md). Every rank
// computes the same order from the hosts it agreed on at connect.
std::vector<int> halving_distances(const Call& call, const Fold& fold) {
  std::vector<int> distances;
  for (int d = fold.p2 / 2; d >= 1; d /= 2) distances.push_back(d);
  const std::vector<std::string>* hosts = hosts_of(call);
  if (hosts == nullptr || static_cast<int>(hosts->size()) != call.size) return distances;
  // Pairs that cross hosts at each distance, counted once (not in every comparison).
  std::vector<std::pair<int, int>> ranked;  // (crossings, distance), Rabenseifner's order
  bool any = false;
  for (int d : distances) {
    int count = 0;
    for (int v = 0; v < fold.p2; ++v) count += (*hosts)[fold.real(v)] != (*hosts)[fold.real(v ^ d)];
    any = any || count > 0;
    ranked.emplace_back(count, d);
  }
  if (!any) return distances;  // one host: nothing to reorder
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t k = 0; k < ranked.size(); ++k) distances[k] = ranked[k].second;
  return distances;
}

// Sends [begin, begin + elements) in the chunks exchange_and_reduce receives it in.
void send_chunked(const Call& call, Step& step, int peer, const transport::Memory& from,
                  size_t begin, size_t elements) {
  size_t per = chunk_elements(call);
  for (size_t done = 0; done < elements || done == 0; done += per) {
    step.send(peer, from, call.bytes(begin + done), call.bytes(std::min(per, elements - done)));
    if (elements == 0) break;
  }
}

// Receives `elements` into scratch from `peer` while sending the range [send_begin,
// +send_elements) of `from` (when `from` is not null), both cut into the same chunks, and
// reduces each received chunk into the output at `reduce_begin` as soon as it lands:
// out = current ⊕ received.
void exchange_and_reduce(const Call& call, Step& step, Scratch& scratch, int peer,
                         const transport::Memory* from, size_t send_begin, size_t send_elements,
                         const uint8_t* current, size_t reduce_begin, size_t elements) {
  size_t per = chunk_elements(call);
  std::vector<transport::RequestPtr> receives;
  for (size_t done = 0; done < elements || (done == 0 && elements == 0); done += per) {
    size_t n = std::min(per, elements - done);
    receives.push_back(step.recv(peer, scratch.memory(), call.bytes(done), call.bytes(n)));
    if (elements == 0) break;
  }
  if (from != nullptr) send_chunked(call, step, peer, *from, send_begin, send_elements);
  size_t done = 0;
  for (const auto& request : receives) {
    step.wait(request);
    size_t n = std::min(per, elements - done);
    size_t at = call.bytes(reduce_begin + done);
    call.reduce_to(call.output + at, current + at, scratch.data() + call.bytes(done), n);
    done += n;
  }
  step.wait();
}

// The fold before the core: returns where this rank's current vector lives.
const uint8_t* fold_in(const Call& call, const Fold& fold, Step& step, Scratch& scratch) {
  if (fold.partner < 0) return call.input;
  if (fold.sits_out) {
    send_chunked(call, step, fold.partner, *call.input_memory, 0, call.count);
    step.wait();
    return nullptr;
  }
  exchange_and_reduce(call, step, scratch, fold.partner, nullptr, 0, 0, call.input, 0, call.count);
  return call.output;
}

void fold_out(const Call& call, const Fold& fold, Step& step) {
  if (fold.partner < 0) return;
  if (fold.sits_out) {
    step.recv(fold.partner, *call.output_memory, 0, call.bytes(call.count));
  } else {
    step.send(fold.partner, *call.output_memory, 0, call.bytes(call.count));
  }
  step.wait();
}

// One halving step: the range [begin, end) is split at mid; this rank keeps one half (and
// reduces into it) and gives the other to its partner. The allgather undoes the steps in reverse,
// sending the kept half and receiving the given one.
struct Half {
  size_t begin, length;
};
struct Level {
  size_t begin, mid, end;
  bool lower;  // this rank keeps [begin, mid)
  Half kept() const { return lower ? Half{begin, mid - begin} : Half{mid, end - mid}; }
  Half given() const { return lower ? Half{mid, end - mid} : Half{begin, mid - begin}; }
};

void halving_doubling_run(const Call& call) {
  Fold fold(call);
  Step step(call);
  // Received halves (at most the whole vector, from a folding partner) land here.
  Scratch pool(call, call.bytes(std::max<size_t>(call.count, 1)));
  const uint8_t* current = fold_in(call, fold, step, pool);
  if (!fold.sits_out) {
    const transport::Memory* current_memory =
        current == call.input ? call.input_memory : call.output_memory;
    std::vector<Level> levels;
    std::vector<int> distances = halving_distances(call, fold);
    Half range{0, call.count};
    for (int d : distances) {
      int peer = fold.real(fold.virt ^ d);
      Level level{range.begin, range.begin + range.length / 2, range.begin + range.length,
                  (fold.virt & d) == 0};
      levels.push_back(level);
      exchange_and_reduce(call, step, pool, peer, current_memory, level.given().begin,
                          level.given().length, current, level.kept().begin, level.kept().length);
      current = call.output;
      current_memory = call.output_memory;
      range = level.kept();
    }
    // Recursive doubling allgather: undo the levels, swapping final halves with each partner.
    for (int i = static_cast<int>(levels.size()) - 1; i >= 0; --i) {
      const Level& level = levels[i];
      int peer = fold.real(fold.virt ^ distances[i]);
      // One message each way: nothing to reduce.
      step.recv(peer, *call.output_memory, call.bytes(level.given().begin),
                call.bytes(level.given().length));
      step.send(peer, *call.output_memory, call.bytes(level.kept().begin),
                call.bytes(level.kept().length));
      step.wait();
    }
  }
  fold_out(call, fold, step);
}

void recursive_doubling_run(const Call& call) {
  Fold fold(call);
  Step step(call);
  Scratch pool(call, call.bytes(std::max<size_t>(call.count, 1)));
  const uint8_t* current = fold_in(call, fold, step, pool);
  if (!fold.sits_out) {
    for (int d = 1; d < fold.p2; d *= 2) {
      int peer = fold.real(fold.virt ^ d);
      const transport::Memory& from =
          current == call.input ? *call.input_memory : *call.output_memory;
      // The whole vector goes out while the partner's comes in: reduce only once our send has
      // left, since it may read the very buffer the reduction writes.
      step.recv(peer, pool.memory(), 0, call.bytes(call.count));
      step.send(peer, from, 0, call.bytes(call.count));
      step.wait();
      call.reduce_to(call.output, current, pool.data(), call.count);
      current = call.output;
    }
  }
  fold_out(call, fold, step);
}

// Across hosts (host_links.h) the steps are summed, each at the busiest host link of its
// exchanges: the fold (rank 2i sends its vector to 2i+1, and the result back), then the core,
// where in its k-th step every virtual rank v exchanges `bytes(k)` with v xor the k-th of
// halving_distances (recursive doubling's order does not change its bytes). Both partners
// send at once, so each exchange loads its host links in both directions. The core runs
// `core_passes` times (halving_doubling: the halving and the doubling, the same exchanges).
template <typename Bytes>
double steps_across(const Call& call, HostLinks& links, const CostModel& m, int core_passes,
                    Bytes bytes) {
  Fold fold(call);
  double n = call.bytes(call.count);
  double total = 0;
  if (fold.rem > 0) {
    links.clear();
    for (int i = 0; i < fold.rem; ++i) links.send(2 * i, 2 * i + 1, n);
    total += 2 * links.step(m);  // in, and the result back out: the same links reversed
  }
  std::vector<int> distances = halving_distances(call, fold);
  for (size_t k = 0; k < distances.size(); ++k) {
    links.clear();
    for (int v = 0; v < fold.p2; ++v) {
      links.send(fold.real(v), fold.real(v ^ distances[k]), bytes(k));
    }
    total += core_passes * links.step(m);
  }
  return total;
}

double fold_cost(const Call& call, const CostModel& m) {
  Fold fold(call);
  double n = call.bytes(call.count);
  return fold.rem > 0 ? 2 * m.alpha + 2 * n * m.beta + n * m.gamma : 0;
}

double halving_doubling_cost(const Call& call, const CostModel& m) {
  Fold fold(call);
  double p = fold.p2;
  double n = call.bytes(call.count);
  double reduced = (p - 1) / p * n * m.gamma + (fold.rem > 0 ? n * m.gamma : 0);
  if (HostLinks links(call, Partners::kChanging); links.spans()) {
    // The k-th halving exchanges n / 2^(k+1) (n/2 first), the doubling the same in reverse.
    return steps_across(call, links, m, 2, [&](size_t k) { return n / double(size_t{2} << k); }) +
           reduced;
  }
  double steps = 2 * ceil_log2(fold.p2);
  return steps * m.alpha + 2 * (p - 1) / p * n * m.beta + (p - 1) / p * n * m.gamma +
         fold_cost(call, m);
}

double recursive_doubling_cost(const Call& call, const CostModel& m) {
  Fold fold(call);
  double steps = ceil_log2(fold.p2);
  double n = call.bytes(call.count);
  if (HostLinks links(call, Partners::kChanging); links.spans()) {
    double reduced = (steps + (fold.rem > 0 ? 1 : 0)) * n * m.gamma;
    return steps_across(call, links, m, 1, [&](size_t) { return n; }) + reduced;
  }
  return steps * (m.alpha + n * m.beta + n * m.gamma) + fold_cost(call, m);
}

// The p2 ranks of the power-of-two core send once per step; folding adds one message each way
// per extra rank.
double messages_with_fold(const Call& call, int steps_per_core_rank) {
  Fold fold(call);
  return (double(fold.p2) * steps_per_core_rank + 2.0 * fold.rem) / call.size;
}
double halving_doubling_messages(const Call& call) {
  return messages_with_fold(call, 2 * ceil_log2(Fold(call).p2));
}
double recursive_doubling_messages(const Call& call) {
  return messages_with_fold(call, ceil_log2(Fold(call).p2));
}

bool always(const Call&) { return true; }

}  // namespace

std::vector<Algorithm> halving_doubling_algorithms() {
  return {
      {"halving_doubling", Collective::kAllreduce, always, halving_doubling_cost,
       halving_doubling_messages, halving_doubling_run},
      {"recursive_doubling", Collective::kAllreduce, always, recursive_doubling_cost,
       recursive_doubling_messages, recursive_doubling_run},
  };
}

}  // namespace gloo_lite::algo
