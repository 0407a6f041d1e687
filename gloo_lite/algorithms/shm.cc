// Shared-memory collectives ("shm"): for a context whose ranks all run on one host, the data
// goes through one shared segment per stream (gloo_lite/host_segment.h) instead of messages.
// Each step, every rank copies its part into its slot of one of two alternating buffers and
// publishes its sequence flag; the others read the slots directly (reduce with the kernels of
// reduction.h, or copy out). Steps are chunks of GLOO_LITE_SHM_CHUNK_BYTES per rank, so large
// calls pipeline through a fixed segment and the double buffer lets fast ranks run one step
// ahead. docs/algorithms.md ("shm") has the steps and the cost.
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/shm.h"
#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/host_segment.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite::algo {
namespace {

// Up to this size an allreduce (reduce) is one step: every rank (the root) reduces all P slots
// itself, one flag round trip instead of two.
constexpr size_t kOneStepBytes = 16 * 1024;

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

size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// Elements [begin, end) of part `s` of `n` elements in `parts` nearly equal parts.
size_t part_begin(size_t n, int parts, int s) { return n * static_cast<size_t>(s) / parts; }

// Piece `k` of a block of `block` elements in pieces of `piece`: its length (0 past the end).
size_t piece_length(size_t block, size_t piece, size_t k) {
  return block > k * piece ? std::min(piece, block - k * piece) : 0;
}

// dst = input(0) op input(1) op ... op input(P-1), `count` elements, where input(q) points at
// rank q's: the same order on every rank, so that every rank computes the same bits.
template <typename Input>
void reduce_inputs(const Call& call, const Input& input, uint8_t* dst, size_t count) {
  if (count == 0) return;
  call.reduce_to(dst, input(0), input(1), count);
  for (int q = 2; q < call.size; ++q) call.reduce_into(dst, input(q), count);
}

// The same over the slots of `buffer`, at `offset` bytes.
void reduce_slots(const Call& call, HostSegment& segment, int buffer, size_t offset, uint8_t* dst,
                  size_t count) {
  reduce_inputs(
      call, [&](int q) { return segment.slot(q, buffer) + offset; }, dst, count);
}

// Reduces this rank's part [lo, hi) of the chunk in `buffer` into its own slot, in place: only
// this rank reads or writes that part of its slot during the step.
void reduce_own_part(const Call& call, HostSegment& segment, int buffer, size_t lo, size_t hi) {
  uint8_t* mine = segment.slot(call.rank, buffer) + call.bytes(lo);
  for (int q = 0; q < call.size; ++q) {
    if (q != call.rank && hi > lo) {
      call.reduce_into(mine, segment.slot(q, buffer) + call.bytes(lo), hi - lo);
    }
  }
}

// Every slot's reduced part of the chunk in `buffer` into `out` (the chunk's place in the
// output).
void copy_out_parts(const Call& call, HostSegment& segment, int buffer, size_t length,
                    uint8_t* out) {
  for (int s = 0; s < call.size; ++s) {
    size_t lo = part_begin(length, call.size, s), hi = part_begin(length, call.size, s + 1);
    std::memcpy(out + call.bytes(lo), segment.slot(s, buffer) + call.bytes(lo),
                call.bytes(hi - lo));
  }
}

// Small vectors: one step, every rank (only the root, for reduce) reduces all inputs. The
// smallest (a loss, a norm, a flag) travel on the flag's own cache line (inline_payload), so that
// a peer's flag brings its data.
void one_step_reduction(const Call& call, HostSegment& segment, bool reduce_here) {
  int buffer = segment.acquire_buffer();
  const bool on_flag_line = call.bytes(call.count) <= HostSegment::kInlineBytes;
  auto input = [&](int q) {
    return on_flag_line ? segment.inline_payload(q, buffer) : segment.slot(q, buffer);
  };
  std::memcpy(input(call.rank), call.input, call.bytes(call.count));
  segment.publish();
  if (reduce_here) {
    segment.wait_all(segment.seq());
    reduce_inputs(call, input, call.output, call.count);
  }
  // Readers are done with the buffer before their next publish.
  segment.release_buffer(buffer, segment.seq() + 1);
}

// allreduce (to_all) and reduce (the root only) in chunks: copy in, reduce one's part of the
// chunk in one's slot, publish, copy every part out. allreduce copies the next chunk in before
// copying this one out, so that the others can start reducing it meanwhile.
void chunked_reduction(const Call& call, HostSegment& segment, bool to_all) {
  const size_t n = call.count;
  const size_t chunk = segment.chunk_bytes() / call.element;
  const size_t chunks = ceil_div(n, chunk);
  auto length = [&](size_t k) { return std::min(chunk, n - k * chunk); };
  int buffer = segment.acquire_buffer();
  std::memcpy(segment.slot(call.rank, buffer), call.input, call.bytes(length(0)));
  segment.publish();
  for (size_t k = 0; k < chunks; ++k) {
    size_t m = length(k);
    segment.wait_all(segment.seq());  // every slot holds chunk k
    reduce_own_part(call, segment, buffer, part_begin(m, call.size, call.rank),
                    part_begin(m, call.size, call.rank + 1));
    segment.publish();
    bool copy_out = to_all || call.rank == call.root;
    if (copy_out) segment.wait_all(segment.seq());  // every part of chunk k is reduced
    int next = buffer;
    if (to_all && k + 1 < chunks) {
      next = segment.acquire_buffer();
      std::memcpy(segment.slot(call.rank, next), call.input + call.bytes((k + 1) * chunk),
                  call.bytes(length(k + 1)));
      segment.publish();
    }
    if (copy_out) copy_out_parts(call, segment, buffer, m, call.output + call.bytes(k * chunk));
    segment.release_buffer(buffer, segment.seq() + 1);
    if (!to_all && k + 1 < chunks) {
      next = segment.acquire_buffer();
      std::memcpy(segment.slot(call.rank, next), call.input + call.bytes((k + 1) * chunk),
                  call.bytes(length(k + 1)));
      segment.publish();
    }
    buffer = next;
  }
}

void run_allreduce(const Call& call, HostSegment& segment) {
  if (call.bytes(call.count) <= std::min(kOneStepBytes, segment.chunk_bytes())) {
    one_step_reduction(call, segment, true);
  } else {
    chunked_reduction(call, segment, true);
  }
}

void run_reduce(const Call& call, HostSegment& segment) {
  if (call.bytes(call.count) <= std::min(kOneStepBytes, segment.chunk_bytes())) {
    one_step_reduction(call, segment, call.rank == call.root);
  } else {
    chunked_reduction(call, segment, false);
  }
}

// Step k: every rank copies piece k of every block into its slot (piece s at s*piece); rank r
// reduces piece k of block r from all slots straight into its output.
void run_reduce_scatter(const Call& call, HostSegment& segment) {
  const size_t piece = segment.chunk_bytes() / static_cast<size_t>(call.size) / call.element;
  const size_t longest = *std::max_element(call.blocks.begin(), call.blocks.end());
  for (size_t k = 0; k < ceil_div(longest, piece); ++k) {
    int buffer = segment.acquire_buffer();
    uint8_t* mine = segment.slot(call.rank, buffer);
    for (int s = 0; s < call.size; ++s) {
      std::memcpy(mine + call.bytes(s * piece),
                  call.input + call.bytes(call.offsets[s] + k * piece),
                  call.bytes(piece_length(call.blocks[s], piece, k)));
    }
    segment.publish();
    segment.wait_all(segment.seq());
    // (An empty block may come with a null output: no pointer into it then.)
    size_t length = piece_length(call.blocks[call.rank], piece, k);
    if (length > 0) {
      reduce_slots(call, segment, buffer, call.bytes(call.rank * piece),
                   call.output + call.bytes(k * piece), length);
    }
    segment.release_buffer(buffer, segment.seq() + 1);
  }
}

// Step k: every rank copies piece k of its block (already in place in the output) into its
// slot; everyone copies the others' pieces out.
void run_allgather(const Call& call, HostSegment& segment) {
  const size_t piece = segment.chunk_bytes() / call.element;
  const size_t longest = *std::max_element(call.blocks.begin(), call.blocks.end());
  for (size_t k = 0; k < ceil_div(longest, piece); ++k) {
    int buffer = segment.acquire_buffer();
    std::memcpy(segment.slot(call.rank, buffer),
                call.output + call.bytes(call.offsets[call.rank] + k * piece),
                call.bytes(piece_length(call.blocks[call.rank], piece, k)));
    segment.publish();
    segment.wait_all(segment.seq());
    for (int s = 0; s < call.size; ++s) {
      if (s == call.rank) continue;
      std::memcpy(call.output + call.bytes(call.offsets[s] + k * piece), segment.slot(s, buffer),
                  call.bytes(piece_length(call.blocks[s], piece, k)));
    }
    segment.release_buffer(buffer, segment.seq() + 1);
  }
}

// A vector that fits a slot (below single_copy_bytes): one step in the root's own slot, in one
// of its pieces when it fits one (HostSegment::next_piece), else in the whole slot. The root
// copies it in and publishes; each reader waits for the root alone, copies it out and publishes
// that it is done. Nobody waits for all: the root returns at once, as direct's does, and with
// pieces may run as many uses of a buffer ahead as a slot holds pieces (it waits for a piece's
// readers only when it comes to rewrite it). Two ranks that both think they are the root write
// different slots, so no reader gets a mixture; the groups that disagree meet at the next call
// in which they wait for each other, which compares this call's fingerprints too
// (HostSegment::check_fingerprint).
void one_step_broadcast(const Call& call, HostSegment& segment) {
  const size_t bytes = call.bytes(call.count);
  const bool in_piece = bytes <= segment.piece_bytes();
  const bool root = call.rank == call.root;
  HostSegment::Piece where{0, 0, 0};
  if (in_piece) {
    where = root ? segment.acquire_piece() : segment.next_piece();
  } else {
    where.buffer = root ? segment.acquire_buffer() : segment.next_buffer();
  }
  uint8_t* place = segment.slot(call.root, where.buffer) + where.offset;
  if (root) {
    std::memcpy(place, call.output, bytes);
  } else {
    segment.wait_for(call.root, segment.seq() + 1);  // compares the root's fingerprint
    std::memcpy(call.output, place, bytes);
  }
  segment.publish();
  if (in_piece) {
    segment.release_piece(where, segment.seq());
  } else {
    segment.release_buffer(where.buffer, segment.seq());
  }
}

// Step k: the root copies piece k into a whole buffer (all P slots) and publishes; the others
// copy it out and publish that they are done with it. The root is never held up by readers
// more than two steps behind (and, once per call, waits for them at the first step).
void run_broadcast(const Call& call, HostSegment& segment) {
  const size_t piece = segment.chunk_bytes() * static_cast<size_t>(call.size) / call.element;
  uint8_t* data = call.output;
  for (size_t k = 0; k < ceil_div(call.count, piece); ++k) {
    size_t bytes = call.bytes(piece_length(call.count, piece, k));
    int buffer = call.rank == call.root ? segment.acquire_buffer() : segment.next_buffer();
    if (call.rank == call.root) {
      std::memcpy(segment.area(buffer), data + call.bytes(k * piece), bytes);
      segment.publish();
    } else {
      segment.wait_for(call.root, segment.seq() + 1);
      std::memcpy(data + call.bytes(k * piece), segment.area(buffer), bytes);
      segment.publish();
    }
    segment.release_buffer(buffer, segment.seq());
    // Once per call every rank, the root too, waits for all after the first step: each then
    // compares every rank's fingerprint, so that ranks that disagree on the root all raise
    // MismatchError (otherwise two "roots" would return without waiting for anybody).
    if (k == 0) segment.wait_all(segment.seq());
  }
}

// From this size a broadcast is one copy: the readers read the root's own buffer with
// process_vm_readv (CMA) instead of the root copying it into the segment and each reader out
// of it (two copies, and the root's copy on the critical path). Below, the copies through the
// segment cost less: at P = 2 up to about 64 KiB (where the syscall's page walk catches up with
// the second memcpy), with more ranks up to a whole slot (the readers copy out in parallel while
// the root, which need not wait for them, goes on; CMA's every rank waits for every rank).
// Measured 2026-12-05 (docs/algorithms.md, "Small broadcasts").
size_t single_copy_bytes(int ranks) { return ranks <= 2 ? 64 * 1024 : 256 * 1024; }
// The roots' bits ride in one 64-bit word.
constexpr int kSingleCopyMaxRanks = 64;
// HostSegment::post() words: this rank's buffer address (the root's is read by the readers,
// each reader's by the root); each rank's verdict of this call ("could not copy"), in one of two
// words by the parity of the single-copy calls so far, since a peer may already be one such call
// ahead and post its next verdict before this rank has read this one (never two: it cannot
// finish one that this rank has not published in); read only by this rank, the roots that some
// rank could not copy for in an earlier call (agreed by every rank), and the count of
// single-copy calls (the same on every rank).
constexpr int kAddressWord = 0;
constexpr int kVerdictWord = 1;  // and 2
constexpr int kRefusedWord = 3;
constexpr int kSingleCopiesWord = 4;
// This rank's vector length in bytes: the root writes into a reader only as far as that reader
// said its buffer goes (the fingerprint compares counts only through a hash).
constexpr int kLengthWord = 5;
// "Now copying with segment rank x in single-copy call c" (copy_token), 0 when not; and "left
// single-copy call c early" (c): the two sides of the handshake that keeps a rank that leaves by
// an exception from handing its buffer back to its caller while a peer still copies from or into
// it (copy_unless_left, leave_single_copy).
constexpr int kCopyingWord = 6;
constexpr int kLeftWord = 7;

uint64_t copy_token(uint64_t call, int peer) {
  return call << 8 | static_cast<uint64_t>(peer + 1);  // peers < kSingleCopyMaxRanks
}

// Copies `bytes` between `local` here and `remote` in process `pid`: a read (process_vm_readv)
// or a write (process_vm_writev). False where CMA is not permitted (EPERM, ENOSYS, a kernel
// without it, GLOO_LITE_SHM_CMA=0 on this rank) or the copy fails.
bool copy_with_peer(int64_t pid, uint8_t* local, uint64_t remote, size_t bytes, bool write) {
  if (!knob_bool("GLOO_LITE_SHM_CMA")) return false;
  size_t done = 0;
  while (done < bytes) {
    iovec here{local + done, bytes - done};
    iovec there{reinterpret_cast<void*>(remote + done), bytes - done};
    ssize_t n = write ? ::process_vm_writev(static_cast<pid_t>(pid), &here, 1, &there, 1, 0)
                      : ::process_vm_readv(static_cast<pid_t>(pid), &here, 1, &there, 1, 0);
    if (n <= 0) return false;  // (a partial copy goes on; an error or nothing copied gives up)
    done += static_cast<size_t>(n);
  }
  return true;
}

// How many leading bytes of the vector each reader reads itself; the root writes the rest into
// every reader's buffer. With P - 1 readers the root's share of each is 1/P, so that the root
// (P - 1 tails) and each reader (its head) copy the same amount, in parallel: at P = 2 each
// copies half. On a page boundary, so that no page is pinned by both copies.
size_t reader_share(size_t bytes, int ranks) {
  constexpr size_t kPage = 4096;
  const size_t tail = bytes / static_cast<size_t>(ranks) / kPage * kPage;
  return bytes - tail;
}

enum class Copied { kYes, kRefused, kPeerLeft };

// One CMA copy with `peer` in single-copy call `call`, unless the peer has left the call: the copy
// is announced first (post_ordered), the peer's "left" read after; a rank that leaves posts
// "left" (post_ordered) and then reads the announcements (leave_single_copy). One of the two always
// sees the other's word, so no copy starts into or from a buffer already handed back.
Copied copy_unless_left(HostSegment& segment, uint64_t call, int peer, uint8_t* local,
                        uint64_t remote, size_t bytes, bool write) {
  segment.post_ordered(kCopyingWord, copy_token(call, peer));
  Copied copied = Copied::kPeerLeft;
  if (segment.posted(peer, kLeftWord) != call) {
    copied = copy_with_peer(segment.pid(peer), local, remote, bytes, write) ? Copied::kYes
                                                                            : Copied::kRefused;
  }
  segment.post_ordered(kCopyingWord, 0);
  return copied;
}

// Leaving single-copy call `call` by an exception after this rank posted its address: says so,
// then waits while some rank's announced copy names this rank (a system call in progress, so
// bounded by the copy's time), unless that rank is gone: the root waits for the readers still
// reading its buffer, a reader for the root still writing into its own.
void leave_single_copy(const Call& call, HostSegment& segment, uint64_t single_copy) {
  segment.post_ordered(kLeftWord, single_copy);
  const uint64_t mine = copy_token(single_copy, call.rank);
  // Generous: far beyond a system call copying the vector at memory speed.
  const Deadline bound = Deadline::after(std::chrono::seconds(2) +
                                         std::chrono::milliseconds(call.bytes(call.count) >> 20));
  for (int r = 0; r < call.size; ++r) {
    // From 50 us (a small vector's copy) doubling to 1 ms (a large one's).
    Backoff backoff(std::chrono::microseconds(50), std::chrono::milliseconds(1));
    while (r != call.rank && segment.posted(r, kCopyingWord) == mine && !segment.gone(r) &&
           backoff.sleep(bound)) {
    }
  }
}

// The backstop behind the fingerprint (which compares counts only through a hash): `peer`
// posted the same vector length as this rank, or the call fails before any byte is copied.
void require_same_length(const Call& call, HostSegment& segment, int peer) {
  const uint64_t theirs = segment.posted(peer, kLengthWord);
  const size_t mine = call.bytes(call.count);
  if (theirs == mine) return;
  throw MismatchError("collective mismatch: broadcast from root " + std::to_string(call.root) +
                      ": this rank's buffer holds " + std::to_string(mine) +
                      " bytes, segment rank " + std::to_string(peer) + "'s " +
                      std::to_string(theirs) + "; every rank must broadcast the same count");
}

// The root's share: it writes the tail of the vector into every reader still in the call, as far
// as the length that reader posted. Returns false when a write failed (CMA refused).
bool write_tails(const Call& call, HostSegment& segment, uint64_t single_copy, size_t head) {
  const size_t bytes = call.bytes(call.count);
  for (int r = 0; r < call.size; ++r) {
    if (r == call.root) continue;
    segment.wait_for(r, segment.seq());  // its address is posted; compares fingerprints
    require_same_length(call, segment, r);
    Copied copied = copy_unless_left(segment, single_copy, r, call.output + head,
                                     segment.posted(r, kAddressWord) + head, bytes - head,
                                     /*write=*/true);
    if (copied == Copied::kRefused) return false;  // (one that left fails the call anyway)
  }
  return true;
}

// The single-copy broadcast: every rank posts its buffer's address and length and publishes;
// each reader reads the head of the vector from the root's buffer while the root writes the tail
// into each reader's (process_vm_readv / process_vm_writev, reader_share()), posts whether it
// could, and publishes; everyone waits for everyone (the root may not return, nor touch its
// buffer, while a reader still reads it, and a reader's buffer is written until the root
// publishes; a dead rank fails this wait naming it). A rank that leaves early (an abort, a
// timeout, a dead peer) first makes sure that no peer copies from or into its buffer and that
// none will start (copy_unless_left, leave_single_copy). Returns false when some rank could not
// copy: every rank saw the same verdicts, so every rank then runs the segment steps (which follow
// in lockstep and rewrite the whole vector), and no rank tries CMA for this root again.
bool single_copy_broadcast(const Call& call, HostSegment& segment) {
  const uint64_t single_copies = segment.posted(call.rank, kSingleCopiesWord);
  const uint64_t single_copy = single_copies + 1;  // this call's number, the same on every rank
  segment.post(kSingleCopiesWord, single_copy);
  const int verdict_word = kVerdictWord + static_cast<int>(single_copies % 2);
  const size_t bytes = call.bytes(call.count);
  const size_t head = reader_share(bytes, call.size);
  segment.post(kAddressWord, reinterpret_cast<uint64_t>(call.output));
  segment.post(kLengthWord, bytes);
  segment.publish();
  const bool root = call.rank == call.root;
  try {
    bool copied = true;
    if (root) {
      copied = head == bytes || write_tails(call, segment, single_copy, head);
    } else {
      segment.wait_for(call.root, segment.seq());
      require_same_length(call, segment, call.root);
      // A root that has left makes this "not copied": the segment steps that follow fail
      // waiting for it, never return a torn vector.
      copied = copy_unless_left(segment, single_copy, call.root, call.output,
                                segment.posted(call.root, kAddressWord), head,
                                /*write=*/false) == Copied::kYes;
    }
    segment.post(verdict_word, copied ? 0 : 1);
    segment.publish();
    segment.wait_all(segment.seq());
  } catch (...) {
    leave_single_copy(call, segment, single_copy);
    throw;
  }
  for (int r = 0; r < call.size; ++r) {
    if (segment.posted(r, verdict_word) != 0) {
      segment.post(kRefusedWord,
                   segment.posted(call.rank, kRefusedWord) | (uint64_t{1} << call.root));
      return false;
    }
  }
  return true;
}

void run_broadcast_any(const Call& call, HostSegment& segment) {
  bool refused = (segment.posted(call.rank, kRefusedWord) >> call.root) & 1;
  const size_t bytes = call.bytes(call.count);
  if (bytes >= single_copy_bytes(call.size) && call.size <= kSingleCopyMaxRanks && !refused &&
      single_copy_broadcast(call, segment)) {
    return;
  }
  if (bytes <= segment.chunk_bytes()) {
    one_step_broadcast(call, segment);
  } else {
    run_broadcast(call, segment);
  }
}

void run_barrier(const Call&, HostSegment& segment) {
  segment.publish();
  segment.wait_all(segment.seq());
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
      return run_allreduce(call, segment);
    case Collective::kReduce:
      return run_reduce(call, segment);
    case Collective::kBroadcast:
      return run_broadcast_any(call, segment);
    case Collective::kReduceScatter:
      return run_reduce_scatter(call, segment);
    case Collective::kAllgather:
      return run_allgather(call, segment);
    case Collective::kBarrier:
      return run_barrier(call, segment);
    default:
      throw InvalidArgument(std::string(collective_name(call.collective)) +
                            " has no shared-memory steps");
  }
}

double shm_cost(const Call& call, const CostModel& model) { return cost(call, model); }

std::vector<Algorithm> shm_algorithms() {
  return {
      {"shm", Collective::kAllreduce, supports, cost, messages, run<run_allreduce>},
      {"shm", Collective::kReduceScatter, supports, cost, messages, run<run_reduce_scatter>},
      {"shm", Collective::kAllgather, supports, cost, messages, run<run_allgather>},
      {"shm", Collective::kBroadcast, supports, cost, messages, run<run_broadcast_any>},
      {"shm", Collective::kReduce, supports, cost, messages, run<run_reduce>},
      {"shm", Collective::kBarrier, supports, cost, messages, run<run_barrier>},
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
