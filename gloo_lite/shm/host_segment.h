// The shared segment of the shared-memory collectives (gloo_lite/shm/collectives.cc): one per
// stream of a context whose ranks all run on one host, created at the stream's first shared-memory
// call.
//
// Layout (docs/algorithms.md, "shm"): a header, an abort record, one control block per
// rank (its flag line: the sequence flag, its latest call's fingerprint and the inline
// payloads, on one cache line; its pid and "closed" mark, posted words, the fingerprints of its
// recent calls), then two buffers of P slots of chunk_bytes each.
//
// Protocol: every rank counts its publishes; all ranks publish the same number of times per
// call, so the counts advance in lockstep and "rank q reached n" says exactly which step of
// which call q has finished. Nothing is reset between calls (no trailing barrier): a buffer is
// rewritten only once every rank has reached the count after which it no longer reads it.
// A waiter fails promptly when any rank aborts (the abort record), when the rank it waits for
// died or closed its context, or when a peer's call has another fingerprint; at the call's
// deadline it throws TimeoutError naming the ranks that are behind.
#pragma once

#include <atomic>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/shared_memory.h"
#include "gloo_lite/base/shared_word.h"
#include "gloo_lite/base/wait_policy.h"
#include "gloo_lite/transport/abort_cause.h"
#include "gloo_lite/transport/op.h"

namespace gloo_lite {

class ContextEngine;
namespace algo {
struct Call;
}

// Some rank could not create or map the segment; every rank gets the same verdict.
class SegmentUnavailable : public Error {
 public:
  using Error::Error;
};

class HostSegment {
 public:
  // A collective of every rank of `context`: rank 0 creates the segment for the call's stream and
  // publishes it in the store, the others map it, and every rank learns whether all of them
  // succeeded. Throws SegmentUnavailable (the same verdict on every rank) when one could not;
  // TimeoutError when a rank does not come; ConnectionError when the context fails meanwhile.
  // Runs as part of `call` (the stream's first shm call): its tag, deadline and mesh. The
  // segment's ranks are the call's (call.rank of call.size); a non-empty `group` names that
  // subset of the context's ranks in the store keys (hierarchical.cc: the ranks of one host),
  // and `context_ranks` gives the context rank of each segment rank (empty: the same ranks, a
  // segment of the whole context). Every text and abort record names context ranks.
  static std::unique_ptr<HostSegment> attach(ContextEngine& context, const algo::Call& call,
                                             size_t chunk_bytes, const std::string& group = "",
                                             const std::vector<int>& context_ranks = {});
  // Marks this rank closed: peers that still wait for it fail instead of hanging.
  ~HostSegment();
  HostSegment(const HostSegment&) = delete;
  HostSegment& operator=(const HostSegment&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t chunk_bytes() const { return chunk_; }
  // Rank r's slot in buffer b (chunk_bytes), and all P slots of buffer b as one area.
  uint8_t* slot(int rank, int buffer) const { return area(buffer) + size_t(rank) * chunk_; }
  uint8_t* area(int buffer) const { return data_ + size_t(buffer) * size_ * chunk_; }

  // Rank r's payload for buffer b on its flag's cache line: a one-step reduction of at most
  // kInlineBytes puts its input there instead of in its slot, so that a peer's wait for the flag
  // brings the data too. Owned like slot(r, b): written by r after acquire_buffer(), read by the
  // peers once r's flag shows the step.
  static constexpr size_t kInlineBytes = 16;
  uint8_t* inline_payload(int rank, int buffer) const;

  // --- one call at a time (the stream's) ---
  // Announces this call's fingerprint for the peers to compare with theirs.
  void begin(const algo::Call& call);
  // Cancels what begin() and the waits left (the mismatch probe).
  void end();
  // This rank's publish count; the next publish makes it seq() + 1.
  uint64_t seq() const { return seq_; }
  // Calls begun on this segment, this one included (the same on every rank).
  uint64_t calls() const { return calls_; }
  void publish();
  // A few words per rank that a step hands the peers (the single-copy broadcast's address and
  // its readers' verdicts), zero at first: post() before publish(), posted() after waiting for
  // that publish.
  static constexpr int kWords = 8;
  void post(int index, uint64_t word);
  uint64_t posted(int rank, int index) const;
  // post() as a sequentially consistent store. posted() loads are sequentially consistent too,
  // so when two ranks each post_ordered() a word and then read the other's, at least one of them
  // sees the other's word (the two-sided handshake of a rank that leaves a call early and one
  // that may still copy into or out of its memory). No fence: ThreadSanitizer does not model
  // atomic_thread_fence, and GCC refuses it under -fsanitize=thread.
  void post_ordered(int index, uint64_t word);
  // Whether segment rank `rank` closed its context or its process exited.
  bool gone(int rank) const;
  // The process of segment rank `rank` (the same for ranks that are threads of one process).
  int64_t pid(int rank) const;
  void wait_for(int rank, uint64_t target);
  void wait_all(uint64_t target);
  // The buffer for the next step (they alternate); acquire_buffer() also waits until no rank
  // still reads it (see release_buffer).
  int next_buffer();
  int acquire_buffer();
  // Every rank has finished reading `buffer` once all counts reach `seq`.
  void release_buffer(int buffer, uint64_t seq) {
    free_after_[buffer] = whole_after_[buffer] = seq;
  }

  // A small message needs a piece of one slot, not a buffer: a slot of the next buffer as a ring
  // of kPieces pieces of piece_bytes(), one per use of that buffer, so that a writer (a
  // broadcast's root) may run that many uses ahead of slow readers. The layout is fixed, so a
  // piece's last readers are known whatever sizes went before. What every rank gets from
  // next_piece() is the same; acquire_piece() also waits until no rank still reads that piece,
  // nor the buffer as a whole use left it; release_piece() as release_buffer() for it.
  static constexpr size_t kPieces = 8;
  size_t piece_bytes() const { return chunk_ / kPieces; }
  struct Piece {
    int buffer;
    size_t offset;  // bytes into a slot
    size_t index;
  };
  Piece next_piece();
  Piece acquire_piece();
  void release_piece(const Piece& piece, uint64_t seq);

  // Fails every waiter of every rank with `reason` (the first abort wins), raised as `kind`.
  // `rank` (and a cause's origin) are context ranks, as the abort record keeps them.
  void abort(int rank, transport::ErrorKind kind, const std::string& reason);
  // The same for a cause that began on another rank (cause.origin), which `rank` relays: its
  // waiters raise it as that rank's, once (gloo_lite/transport/abort_cause.h).
  void abort(int rank, transport::ErrorKind kind, const transport::AbortCause& cause);

 private:
  struct Control;
  HostSegment(std::unique_ptr<SharedMemory> memory, int rank, std::vector<int> context_ranks,
              size_t chunk, double ranks_per_core);
  static size_t data_offset(int size);
  Control& control(int rank) const;
  void check_while_waiting(int rank, uint64_t target, bool slice_over);
  void check_fingerprint(int rank);
  [[noreturn]] void raise_abort() const;
  // "rank 5": segment rank r by its context rank, the one a user knows.
  std::string name(int rank) const;
  // "allreduce (shm, collective #3 on tag 0) on the shared-memory segment"
  std::string what() const;

  std::unique_ptr<SharedMemory> memory_;
  uint8_t* data_;  // the buffers
  int rank_;
  int size_;
  std::vector<int> context_ranks_;  // per segment rank
  size_t chunk_;
  WaitPolicy policy_;  // polls, yields or sleeps by the host's load (one call at a time)
  std::vector<std::unique_ptr<ProcessWatch>> watches_;  // per rank; null for this process
  uint64_t seq_ = 0;
  uint64_t calls_ = 0;
  int next_buffer_ = 0;
  uint64_t uses_[2] = {0, 0};  // next_buffer() calls per buffer: the ring position of pieces
  // Per buffer: when its last use of any kind is read (acquire_buffer waits for it), when its last
  // use as a whole is (acquire_piece waits for it and for its piece's own, piece_after_).
  uint64_t free_after_[2] = {0, 0};
  uint64_t whole_after_[2] = {0, 0};
  uint64_t piece_after_[2][kPieces] = {};
  // The smallest count seen of any rank: most waits end here without touching a flag.
  uint64_t everyone_reached_ = 0;
  // Per call.
  const algo::Call* call_ = nullptr;
  uint64_t call_start_ = 0;  // seq_ at begin(): a peer past it has announced this call
  std::vector<bool> checked_;
  // Per peer: 1 + the index of the last call whose fingerprint was compared with its record (0:
  // none), so that the next call's look back at it is skipped.
  std::vector<uint64_t> compared_;
  // This call's and the previous one's (check_fingerprint compares both).
  uint64_t current_fingerprint_ = 0, current_tag_ = 0;
  uint64_t previous_fingerprint_ = 0, previous_tag_ = 0;
  std::vector<transport::RequestPtr> probes_;  // per peer, posted while waiting long for it
  // This rank raised the abort record or wrote to it (its context failed): closing needs no
  // word about it. Otherwise a mismatch another rank found after this rank's last call
  // returned is logged at close (as the matching engine does for messages). Atomic: a thread in
  // a call raises the record while another fails the context, which writes it.
  mutable std::atomic<bool> abort_seen_{false};
};

}  // namespace gloo_lite
