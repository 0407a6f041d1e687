// The host segment's synchronisation (host_segment.h, "Protocol"): beginning and ending a call,
// publishing and posting, the double buffer and its pieces, waiting for one or all ranks (with
// the fingerprint check, dead peers and the deadline), and the abort record.
#include "gloo_lite/shm/host_segment.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/fingerprint.h"
#include "gloo_lite/hang_report.h"
#include "gloo_lite/shm/segment_layout.h"
#include "gloo_lite/transport/matching.h"

namespace gloo_lite {

// The segment's layout (segment_layout.h): the header, the abort record, the control blocks.
using namespace segment_layout;

namespace {

// A waiter looks at dead peers, its deadline and stray messages this often while it sleeps.
constexpr auto kSlice = std::chrono::milliseconds(20);

// "rank 5", "ranks 4 and 5": segment ranks by their context ranks.
std::string rank_word(const std::vector<int>& context_ranks, const std::vector<int>& ranks) {
  std::vector<int> named;
  for (int r : ranks) named.push_back(context_ranks[r]);
  return std::string(named.size() == 1 ? "rank " : "ranks ") + rank_list(named);
}

}  // namespace

void HostSegment::begin(const algo::Call& call) {
  call_ = &call;
  // A rank that failed (or timed out waiting for this one) may have left this rank nothing to
  // wait for in this call: look before computing a result.
  if (abort_of(memory_->data()).state.load(std::memory_order_acquire) == 2) {
    raise_abort();
  }
  // A call that runs here posts nothing on the mesh, so nothing would judge the messages that
  // wait for this rank there (a stray of an earlier call that ran on messages, say with an
  // algorithm named by the user), and the shm transport would not even read them: the mesh
  // does it now, as a post of this call would. What it finds fails the ranks here too.
  if (call.context != nullptr) {
    transport::Mesh& mesh = call.context->mesh();
    try {
      mesh.enter_collective(call.tag, call.fingerprint);
    } catch (const MismatchError& e) {
      // The mesh's cause as it began (its origin, its words), not this rank's account of it
      // ("rank 1 aborted: ..."), which the ranks here would relay nested.
      transport::AbortCause cause = mesh.failure_cause();
      if (!cause.known()) cause = {context_ranks_[rank_], e.what()};
      abort(context_ranks_[rank_], transport::ErrorKind::kMismatch, cause);
      throw;
    }
  }
  call_start_ = seq_;
  std::fill(checked_.begin(), checked_.end(), false);
  CallRecord& record = control(rank_).calls[calls_ % kCallRing];
  if (calls_ > 0) {
    previous_fingerprint_ = current_fingerprint_;
    previous_tag_ = current_tag_;
  }
  current_fingerprint_ = call.fingerprint;
  current_tag_ = call.tag;
  // The ring's record and its copy on the flag line, each the index first, the fingerprint
  // released after it: a reader that acquires the fingerprint and then finds the index it
  // expects has that call's fingerprint (check_fingerprint).
  for (CallRecord* written : {&record, &control(rank_).line.latest}) {
    written->index.store(calls_, std::memory_order_relaxed);
    written->fingerprint.store(call.fingerprint, std::memory_order_release);
  }
  ++calls_;  // published with this rank's next flag (a release store)
}

void HostSegment::end() {
  for (transport::RequestPtr& probe : probes_) {
    if (probe) call_->mesh->cancel(probe);
    probe.reset();
  }
  call_ = nullptr;
}

void HostSegment::publish() { gloo_lite::publish(control(rank_).line.flag, ++seq_); }

void HostSegment::post(int index, uint64_t word) {
  control(rank_).words[index].store(word, std::memory_order_relaxed);
}

void HostSegment::post_ordered(int index, uint64_t word) {
  control(rank_).words[index].store(word, std::memory_order_seq_cst);
}

bool HostSegment::gone(int rank) const {
  return control(rank).closed.load(std::memory_order_acquire) != 0 ||
         (watches_[rank] && watches_[rank]->exited());
}

uint64_t HostSegment::posted(int rank, int index) const {
  return control(rank).words[index].load(std::memory_order_seq_cst);  // see post_ordered()
}

int64_t HostSegment::pid(int rank) const {
  return control(rank).pid.load(std::memory_order_acquire);
}

int HostSegment::next_buffer() {
  int buffer = next_buffer_;
  next_buffer_ ^= 1;
  ++uses_[buffer];
  return buffer;
}

HostSegment::Piece HostSegment::next_piece() {
  const int buffer = next_buffer();
  const size_t index = static_cast<size_t>(uses_[buffer] % kPieces);
  return {buffer, index * piece_bytes(), index};
}

HostSegment::Piece HostSegment::acquire_piece() {
  Piece piece = next_piece();
  wait_all(std::max(whole_after_[piece.buffer], piece_after_[piece.buffer][piece.index]));
  return piece;
}

void HostSegment::release_piece(const Piece& piece, uint64_t seq) {
  piece_after_[piece.buffer][piece.index] = seq;
  free_after_[piece.buffer] = seq;
}

int HostSegment::acquire_buffer() {
  int buffer = next_buffer();
  wait_all(free_after_[buffer]);
  return buffer;
}

void HostSegment::wait_all(uint64_t target) {
  if (target <= everyone_reached_) return;
  uint64_t lowest = UINT64_MAX;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    wait_for(peer, target);
    // Acquire: a later wait_all that this count answers (everyone_reached_) reads data
    // published with it, without a load of its own.
    lowest = std::min(lowest, control(peer).line.flag.value.load(std::memory_order_acquire));
  }
  everyone_reached_ = std::min(lowest, seq_);
}

void HostSegment::wait_for(int peer, uint64_t target) {
  SharedWord& flag = control(peer).line.flag;
  auto reached = [&] { return flag.value.load(std::memory_order_acquire) >= target; };
  if (!reached()) {
    auto sleep = [&](const Deadline& until) {
      uint64_t seen = flag.value.load(std::memory_order_acquire);
      return seen >= target || (sleep_while(flag, seen, until, kSlice) && reached());
    };
    // The slice (a look at dead peers and stray messages) starts when the first wait comes back
    // without the flag, not before it: most waits end within the policy's first checks, and a
    // clock read here would cost about as much as the flag's transfer. Each wait sleeps at most
    // kSlice (sleep_while), so a dead peer is still seen within two slices.
    Deadline slice = Deadline::never();
    while (!policy_.wait(reached, sleep, call_->deadline)) {
      if (slice.is_never()) slice = Deadline::after(kSlice);
      bool slice_over = slice.expired();
      check_while_waiting(peer, target, slice_over);
      if (slice_over) slice = Deadline::after(kSlice);
    }
  }
  if (!checked_[peer] && target > call_start_) check_fingerprint(peer);
}

void HostSegment::check_fingerprint(int peer) {
  checked_[peer] = true;
  // This call's fingerprint, then the one before: in a call where some ranks wait for only one
  // peer (the readers of a small broadcast wait for its root, the root for nobody), two groups
  // that each agree among themselves (two "roots") meet nowhere; the next call in which they wait
  // for each other finds it.
  const uint64_t compared_before = compared_[peer];  // this loop updates it
  for (uint64_t back = 1; back <= 2 && back <= calls_; ++back) {
    const uint64_t index = calls_ - back;
    if (back == 2 && compared_before == index + 1) break;  // the call before compared it
    const uint64_t mine = back == 1 ? call_->fingerprint : previous_fingerprint_;
    // This call's record on the flag line (the line this rank has just waited for), else in the
    // ring (the line holds only the latest call). Each was written before the flag this rank
    // waited for, so it holds `index` or a later call's: the fingerprint is read before the index
    // (begin() writes them in the other order), and a record being rewritten for a later call
    // shows that call's index and is skipped.
    uint64_t theirs = 0;
    auto holds_index = [&](const CallRecord& record) {
      theirs = record.fingerprint.load(std::memory_order_acquire);
      return record.index.load(std::memory_order_relaxed) == index;
    };
    const Control& peer_control = control(peer);
    if (!(back == 1 && holds_index(peer_control.line.latest)) &&
        !holds_index(peer_control.calls[index % kCallRing])) {
      continue;  // the peer moved on past it (the others compare)
    }
    if (back == 1) compared_[peer] = index + 1;
    if (theirs == mine) continue;  // the same call
    const uint64_t tag = back == 1 ? call_->tag : previous_tag_;
    std::string text = "collective mismatch: " + name(rank_) + " in " +
                       describe_fingerprint(mine, tag) + " found " + name(peer) + " in " +
                       describe_fingerprint(theirs, tag) + " on the shared-memory segment";
    if (back == 2) {
      text += " (the call before " + describe_fingerprint(call_->fingerprint, call_->tag) +
              ", found when the ranks next waited for each other)";
    }
    text += "; the calls differ in " + fingerprint_difference(mine, theirs) +
            ". Every rank must call the same collectives in the same order with the same type, "
            "op, root, counts and algorithm (GLOO_LITE_CHECK=1 compares every pair before each "
            "call)";
    abort(context_ranks_[rank_], transport::ErrorKind::kMismatch, text);
    // Ranks that wait on messages (another algorithm, another collective, another host) must
    // learn it too, as a mismatch: the context's mesh, whatever view of it this call runs on
    // (a hierarchical phase's subset) and however many transports it mixes.
    call_->context->mesh().abort_with(transport::ErrorKind::kMismatch, text);
    throw MismatchError(text);
  }
}

void HostSegment::check_while_waiting(int peer, uint64_t target, bool slice_over) {
  const AbortRecord& record = abort_of(memory_->data());
  if (record.state.load(std::memory_order_acquire) == 2) raise_abort();
  if (!slice_over) return;
  const Control& theirs = control(peer);
  if (theirs.closed.load(std::memory_order_acquire) != 0) {
    throw ConnectionError(name(peer) + " closed its context while " + name(rank_) +
                          " waited for it in " + what());
  }
  if (watches_[peer] && watches_[peer]->exited()) {
    throw ConnectionError(name(peer) + " (pid " + std::to_string(watches_[peer]->pid()) +
                          ") died while " + name(rank_) + " waited for it in " + what());
  }
  // A peer that runs another algorithm of this call sends messages that nobody here receives:
  // a receive under the call's tag lets the transport compare their fingerprint with this
  // call's (MismatchError). Only from the rank waited for: it cannot have finished the call.
  transport::RequestPtr& probe = probes_[peer];
  if (!probe) {
    probe = call_->mesh->recv(peer, call_->tag, *call_->output_memory, 0, 0, call_->fingerprint);
  }
  if (probe->test()) {
    throw MismatchError("collective mismatch: " + name(rank_) + " in " +
                        describe_fingerprint(call_->fingerprint, call_->tag) +
                        " received a message of " + name(peer) +
                        ", which runs this call with another algorithm");
  }
  if (call_->deadline.expired()) {
    std::vector<int> behind;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && control(r).line.flag.value.load(std::memory_order_acquire) < target) {
        behind.push_back(r);
      }
    }
    if (behind.empty()) behind.push_back(peer);
    throw TimeoutError(rank_word(context_ranks_, behind) + " did not reach step " +
                       std::to_string(target - call_start_) + " of " + what() +
                       " before the deadline (" + name(rank_) + " waited)");
  }
}

void HostSegment::raise_abort() const {
  abort_seen_.store(true, std::memory_order_relaxed);
  const AbortRecord& record = abort_of(memory_->data());
  std::string reason(record.reason, strnlen(record.reason, kReasonBytes));
  auto kind = static_cast<transport::ErrorKind>(record.kind);
  transport::AbortCause cause{record.origin, reason};
  if (kind == transport::ErrorKind::kMismatch) {
    throw transport::RelayedMismatch(reason, std::move(cause));
  }
  std::string what = transport::describe_abort(cause, record.rank,
                                               [](int r) { return "rank " + std::to_string(r); });
  throw transport::RelayedAbort(what, std::move(cause));
}

void HostSegment::abort(int rank, transport::ErrorKind kind, const std::string& reason) {
  abort(rank, kind, {rank, reason});
}

void HostSegment::abort(int rank, transport::ErrorKind kind, const transport::AbortCause& cause) {
  const std::string& reason = cause.text;
  abort_seen_.store(true, std::memory_order_relaxed);
  AbortRecord& record = abort_of(memory_->data());
  uint32_t none = 0;
  if (!record.state.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) return;
  record.rank = rank;
  // ContextEngine ranks, as the callers give them (a group segment's own ranks differ: this class
  // writes context_ranks_[rank_]); the origin came through the mesh, which checked it against
  // the context's size.
  record.origin = cause.known() ? cause.origin : rank;
  record.kind = static_cast<int32_t>(kind);
  size_t length = std::min(reason.size(), kReasonBytes - 1);
  std::memcpy(record.reason, reason.data(), length);
  record.reason[length] = '\0';
  record.state.store(2, std::memory_order_release);
  for (int r = 0; r < size_; ++r) wake_all(control(r).line.flag);
}

std::string HostSegment::name(int rank) const { return name_in(context_ranks_, rank); }

std::string HostSegment::what() const {
  if (call_ == nullptr) return "the shared-memory segment";
  return std::string(algo::collective_name(call_->collective)) + " (shm, " +
         tags::describe(call_->tag) + ") on the shared-memory segment";
}

}  // namespace gloo_lite
