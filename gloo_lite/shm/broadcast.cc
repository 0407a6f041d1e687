// The shared-memory broadcast: small vectors in one step in the root's slot (or a piece of it),
// larger ones in chunks through whole buffers, and from single_copy_bytes one copy between the
// processes' own buffers (process_vm_readv/writev, "CMA"), with the handshake that keeps a rank
// that leaves early from handing back a buffer a peer still copies. docs/algorithms.md ("Small
// broadcasts", "shm").
#include <sys/uio.h>

#include <chrono>
#include <cstring>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/shm/host_segment.h"
#include "gloo_lite/shm/steps.h"

namespace gloo_lite::algo::shm_steps {
namespace {

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

}  // namespace

void broadcast(const Call& call, HostSegment& segment) {
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

}  // namespace gloo_lite::algo::shm_steps
