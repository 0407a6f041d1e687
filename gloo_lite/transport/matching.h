// Internal to the transports: the transport-independent half of a mesh, shared by TCP and
// ibverbs so that both keep the contract of docs/transport.md in one place:
//  - receives posted per tag in posting order, each naming one peer or a set (receive from
//    any); messages match them per (peer, tag) and never overtake;
//  - the unexpected queue (eager payloads and rendezvous announcements that found no receive)
//    and its bound, which charges every entry its payload plus kUnexpectedEntryBytes;
//  - the call check: a message matched by a receive of another call (their fingerprints
//    differ, transport.h) fails that receive and aborts the mesh, wherever it matched; so does
//    a message that waits under a tag for which a receive of another call is posted (a tag is
//    one call, whichever peer the message came from); and a message that waits with no
//    receive of its tag posted but belongs to a call this rank has passed, or carries another
//    fingerprint than this rank's call of that number (matching_calls.h): judged when it
//    arrives and again when this rank starts its next call on the stream, so that no message
//    of another call is silently left in the queue;
//  - the rendezvous bookkeeping: sends awaiting clear-to-send and receives awaiting their data,
//    by id;
//  - completion, failure and cancel of requests, and the end-of-wait rule (first failure,
//    or TimeoutError naming the late peers).
// A transport derives from MatchingMesh, moves the bytes (sockets, queue pairs) and calls
// back into it when a message arrives; the hooks at the bottom are what it must provide.
// Everything here runs under mutex_, except where a comment says otherwise.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gloo_lite/transport/abort_cause.h"
#include "gloo_lite/transport/matching_calls.h"
#include "gloo_lite/transport/op.h"
#include "gloo_lite/transport/transport.h"

namespace gloo_lite::transport {

// What one entry of the unexpected queue costs beyond its payload, charged against the bound
// with it, so that the bound covers the queue's memory and not only its payload bytes (a root
// far ahead sending 8-byte messages once queued 800,000 entries, 660 MB, under a 64 MiB bound
// that counted 6.4 MB of them): the Unexpected record, its list node, the hash-map node and
// bucket of its tag (a message of a call this rank has not reached has a tag of its own), the
// heap block of its payload and the allocator's headers. Measured 190 bytes per 8-byte entry
// under a tag of its own with glibc on x86-64 (830 with the deque per tag used before);
// rounded up for other allocators and larger payloads' rounding.
constexpr size_t kUnexpectedEntryBytes = 256;

class MatchingMesh : public Mesh {
 public:
  // `log_subsystem` names the transport in warnings ("tcp", "ibverbs").
  MatchingMesh(int rank, int size, const char* log_subsystem);
  // Warns with a mismatch that was found after this rank's last call returned and that no
  // call has raised since (the context is being destroyed with it): it is not lost silently.
  ~MatchingMesh() override;

  int rank() const final { return rank_; }
  int size() const final { return size_; }
  // Posting takes the mutex; the transport's send_* hooks then run under it.
  RequestPtr send(int peer, uint64_t tag, const Memory& memory, size_t offset, size_t bytes,
                  uint64_t fingerprint) final;
  RequestPtr recv(const std::vector<int>& peers, uint64_t tag, Memory& memory, size_t offset,
                  size_t bytes, uint64_t fingerprint) final;
  using Mesh::recv;
  using Mesh::send;
  void cancel(const RequestPtr& request) final;
  void cancel_failing(const RequestPtr& request) final;
  void enter_collective(uint64_t tag, uint64_t fingerprint) final;  // matching.cc
  // The transport's name ("tcp") for a peer this mesh serves, "" for one it does not.
  std::string transport_of(int peer) const override;
  // Why the whole mesh failed (kNone while it works). A mixed mesh reads it to carry one
  // sub-mesh's failure to the others (gloo_lite/transport/mixed_mesh.h).
  Failure failure() {
    std::lock_guard<std::mutex> lock(mutex_);
    return mesh_failure_;
  }
  // Mesh::abort with the kind of error the peers raise (kMismatch: a collective mismatch found
  // elsewhere, as a transport that relays aborts through another mesh needs).
  void abort_with(ErrorKind kind, const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mutex_);
    abort_locked(kind, reason);
  }
  // The cause this mesh tells its peers (abort_cause.h): the first it failed with, as it came.
  AbortCause abort_cause() {
    std::lock_guard<std::mutex> lock(mutex_);
    return first_cause_.forward(rank_, mesh_failure_, mesh_failure_.message);
  }
  void abort_relayed(const AbortCause& cause) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      first_cause_.note(cause, mesh_failure_);  // what abort() then forwards
    }
    abort(cause.text);
  }
  AbortCause failure_cause() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!mesh_failure_.failed()) return {};
    return first_cause_.forward(rank_, mesh_failure_, mesh_failure_.message);
  }
  // abort_with for a cause that came from elsewhere (another mesh of this rank): its peers
  // raise it as `cause.origin`'s, not wrapped in this rank's words.
  void relay_abort(ErrorKind kind, const AbortCause& cause) override {
    std::lock_guard<std::mutex> lock(mutex_);
    first_cause_.note(cause, mesh_failure_);
    abort_locked(kind, cause.text);
  }
  // A pair this mesh gave back at connect: both ends found that it cannot serve it after all
  // (its shared memory could not be reserved), and the mixed mesh connects it over the next
  // transport. `here`: this rank's own failure (it warns; its peer only informs).
  struct Declined {
    int peer;
    std::string why;
    bool here;
  };
  // Lets connect() give pairs back instead of failing: a mixed mesh allows it unless this
  // transport was forced (GLOO_LITE_TRANSPORT); a pair no later transport takes then fails.
  void allow_declines() { declines_allowed_ = true; }
  const std::vector<Declined>& declined() const { return declined_; }

  // Whether a waiter has work here right now that no thread of the transport will do: output
  // queued for a peer, a message arriving in parts, records it can read. Only a transport
  // without a progress engine (shared memory) says so; a mixed mesh then keeps its wait
  // slices short (gloo_lite/transport/mixed_mesh.h, rule 2).
  virtual bool has_work_for_waiter() { return false; }

  // One mutex guards all matching state and the transport's own; completions wake waiters
  // through one condition variable.
  std::mutex mutex_;
  std::condition_variable completed_;

 protected:
  friend class Op;

  // --- for the transport's wait loop ---
  // True when every request is done. Otherwise throws, having cancelled what is still pending
  // (so no buffer stays in use once the exception reaches the caller): the first failure, or
  // at the deadline a TimeoutError listing each late operation. False: keep waiting.
  bool finished(const std::vector<RequestPtr>& requests, const Deadline& deadline);

  // --- for the transport's receive path ---
  // The oldest posted receive for `tag` that accepts `peer`, removed and bound to that peer.
  // The transport then checks the message against it: same_call first, then the size.
  OpPtr match_posted(int peer, uint64_t tag);
  // Whether a message of the call `fingerprint` from `peer` may complete `op`. When not (both
  // are checked and differ), op fails with a MismatchError naming both calls and the mesh is
  // aborted with that cause (abort_locked): the transport must not touch op's buffer or read
  // further from the mesh's pairs.
  bool same_call(int peer, const OpPtr& op, uint64_t fingerprint);
  // An announced large message: accepted (clear-to-send), refused (call, size), or queued.
  void on_ready_to_send(int peer, uint64_t tag, uint64_t length, uint64_t send_id,
                        uint64_t fingerprint);
  // The sender awaiting clear-to-send under `send_id`, removed; nullptr if it was cancelled.
  OpPtr take_send_awaiting_clearance(uint64_t send_id);
  // The receive awaiting data under `recv_id`, removed; nullptr if it was cancelled.
  OpPtr take_receive_awaiting_data(uint64_t recv_id);
  // The same receive, left in place: a transport that delivers its data in pieces takes it at
  // the last one, so that a cancel or a failure meanwhile still finds it.
  OpPtr receive_awaiting_data(uint64_t recv_id) const;
  bool receive_awaiting_data_from(int peer) const;
  // How a transport answers a peer's clear-to-send for `send_id`, a send this rank no longer
  // has: with its abort's cause (the mesh failed), with nothing (the send was cancelled by a
  // failing call, whose abort follows: cancel_failing), or with "send cancelled".
  enum class LostSendAnswer { kAbort, kNothing, kCancelled };
  LostSendAnswer answer_for_lost_send(uint64_t send_id);
  // The sender took back a message this rank had matched: the receive fails, unless the
  // sender's call is `failing` (cancel_failing): then it stays awaiting data that never comes,
  // and fails with the sender's abort when it arrives (or at its deadline).
  void on_send_cancelled(int peer, uint64_t recv_id, bool failing = false);
  // Whether an eager payload of `bytes` may join the unexpected queue now (the first entry
  // always may). When not, the transport stops taking messages from that peer until
  // resume_held_messages().
  bool unexpected_has_room(uint64_t bytes) const {
    return unexpected_bytes_ == 0 ||
           unexpected_bytes_ + bytes + kUnexpectedEntryBytes <= unexpected_limit_;
  }
  // An eager message of `length` bytes, counted against the bound; the caller fills payload.
  std::unique_ptr<Unexpected> new_unexpected(int peer, uint64_t length, uint64_t fingerprint);
  // Unless a receive posted under `tag` (for another peer) is of another call: then that
  // receive is rejected as in same_call, and the message dropped.
  void queue_unexpected(uint64_t tag, std::unique_ptr<Unexpected> message);
  // Hands a queued message to a receive that just matched it.
  void deliver_unexpected(const OpPtr& op, Unexpected& message);
  // recv's look at the messages that arrived before it: true when one completed `op`, or
  // one of another call under its tag failed it (reject_call).
  bool match_unexpected(const OpPtr& op);
  // Both ends of a size mismatch fail: the receive and the pair now, the sender when the
  // notice arrives. Nothing is written to the receive buffer.
  void reject_size(int peer, const OpPtr& op, uint64_t sent);
  std::string sender_mismatch_text(int peer, uint64_t tag, uint64_t posted, uint64_t sent) const;

  // --- completion and failure ---
  void complete(const OpPtr& op);
  void fail_op(const OpPtr& op, ErrorKind kind, const std::string& message);
  void fail_op(const OpPtr& op, const Failure& failure) {
    fail_op(op, failure.kind, failure.message);
  }
  // A pair has just closed (peer_open() is false): fails what waits on that peer, and the
  // receives that no live peer can match any more. Eager data that already arrived from the
  // peer stays deliverable.
  void fail_operations_of_peer(int peer, ErrorKind kind, const std::string& message);
  // The whole mesh is broken: remembers why (the first reason wins), so that later requests
  // fail at once, and fails every request the matching state holds.
  void fail_all_operations(ErrorKind kind, const std::string& message);
  const Failure& mesh_failure() const { return mesh_failure_; }
  // Called by the transport's connect(): the peers with an empty address are not served
  // (transport.h); a send or receive naming one fails with InvalidArgument, and the
  // transport keeps no pair for it.
  void set_served(const std::vector<std::string>& addresses);
  bool served(int peer) const { return served_.empty() || served_[peer]; }
  // connect(): `peer` is not served after all (only where declines_allowed_); see Declined.
  void decline(int peer, const std::string& why, bool here) {
    served_[peer] = false;
    declined_.push_back({peer, why, here});
  }
  bool declines_allowed_ = false;
  // `failing`: cancel_failing's rule for a send a peer may clear later.
  bool cancel_locked(const OpPtr& op, bool failing = false);
  std::string describe_op(const Op& op) const;

  const int rank_;
  const int size_;
  // What aborts and a failed close tell the peers; the transport notes the causes it fails with.
  FirstCause first_cause_;
  // What this rank's own operations fail with when it aborts with `cause`: the origin's words,
  // named as the origin's (this rank only relays a peer's cause).
  std::string abort_message(const AbortCause& cause) const {
    return describe_abort(cause, cause.origin, [this](int r) { return describe_peer(r); });
  }
  size_t eager_bytes_ = 0;  // larger messages, and device memory, go by rendezvous
  // The bound for peers on other hosts (peer_on_other_host), where it is larger: there a
  // rendezvous round trip waits behind whatever fills the link's queue (milliseconds), far
  // more than buffering a message costs (docs/transport.md, "Eager across hosts").
  size_t eager_bytes_across_hosts_ = 0;
  size_t eager_limit(int peer) const {
    return peer_on_other_host(peer) ? std::max(eager_bytes_, eager_bytes_across_hosts_)
                                    : eager_bytes_;
  }
  size_t unexpected_limit_ = 0;  // bytes the unexpected queue may be charged, per mesh
  // The knob that sets unexpected_limit_, named when a wait times out at the bound.
  const char* unexpected_knob_ = "GLOO_LITE_TCP_UNEXPECTED_BYTES";

  // --- what the transport provides (called under mutex_) ---
  virtual bool peer_open(int peer) const = 0;
  // Whether the connection to `peer` leaves this host (set at connect, read-only after).
  virtual bool peer_on_other_host(int) const { return false; }
  virtual const Failure& peer_failure(int peer) const = 0;
  // Sends op's payload inline; the transport completes op once its buffer is free again.
  virtual void send_eager(const OpPtr& op) = 0;
  // Announces op (op->id_ is set) to its peer: ready-to-send(tag, bytes, id).
  virtual void send_ready_to_send(const Op& op) = 0;
  // Tells the sender of `send_id` to go ahead into op's buffer (op->id_ is the recv id).
  virtual void send_clear_to_send(int peer, const OpPtr& op, uint64_t send_id) = 0;
  // Sends the mismatch notice (tag, posted, sent) and closes the pair with `text`.
  virtual void send_mismatch_and_close(int peer, const Op& op, uint64_t sent,
                                       const std::string& text) = 0;
  // This rank cannot go on (a collective mismatch): tells every peer `reason` with `kind`, so
  // that they raise the same kind of error promptly, and fails the whole mesh.
  virtual void abort_locked(ErrorKind kind, const std::string& reason) = 0;
  // Room appeared in the unexpected queue: take in what was held back.
  virtual void resume_held_messages() = 0;
  // op was cancelled: the wire must no longer read or write its buffer once this returns.
  // `cleared`: a receive had already given clear-to-send, so its sender may be delivering.
  // May let go of mutex_ while it waits for the peer (ibverbs), so callers keep no iterator
  // into matching state across it.
  // `failing`: cancel_failing's (the context's abort follows): a peer told of the cancel must
  // keep its receive for that abort's cause (on_send_cancelled).
  virtual void cancel_on_wire(const OpPtr& op, bool cleared, bool failing) = 0;
  // Op::test() on a pending op: complete what already arrived, without blocking.
  virtual void make_progress() {}
  // enter_collective(): take in what arrived, without blocking and without a syscall; only a
  // transport whose messages nobody reads unless a thread drives it (shared memory) needs to.
  virtual void take_in_arrivals() {}
  // enter_collective()'s fast path, without the mutex: whether something may have arrived that
  // take_in_arrivals() would read. Only a transport whose arrivals are judged by the threads
  // that drive it alone (no thread of its own judges against a history the fast path leaves
  // behind) may ever say no; the default, yes, keeps the history exact.
  virtual bool arrivals_pending() { return true; }
  // send() and recv(), before they judge the mesh and the peer: a notice `peer` left out of
  // band (its close or abort) that nobody has read yet is read now, with what it wrote before
  // it, so that a post after a peer's abort fails as it would where a thread reads each notice
  // as it comes (TCP). Costs a load per post; only a transport without such a thread needs it.
  virtual void take_in_notice(int peer) { (void)peer; }
  // A request completed or failed and completed_ was notified; a transport whose waiters
  // may sleep elsewhere (TCP's caller-driven poll) wakes them here.
  virtual void wake_polling_waiter() {}

 private:
  void check_peer(const char* what, int peer) const;
  uint64_t next_id();
  // Lets the sender of `send_id` deliver into op's buffer.
  void clear_to_send(int peer, const OpPtr& op, uint64_t send_id);
  // Fails op and aborts the mesh: `peer` sent a message of the call `fingerprint` into it.
  void reject_call(int peer, const OpPtr& op, uint64_t fingerprint);
  // "collective mismatch: rank 1 in <mine> <how> <peer> in <theirs>; the calls differ in ...".
  std::string call_mismatch_text(int peer, uint64_t mine, uint64_t my_tag, uint64_t theirs,
                                 uint64_t tag, const std::string& how) const;
  // A message of `peer` under `tag` that no receive took, judged against this rank's calls on
  // the stream (calls_): when no call of this rank can take it (CallHistory's kPassed and
  // kOtherCall), the mesh is aborted with a MismatchError naming both calls, and true.
  bool reject_if_stray(int peer, uint64_t tag, uint64_t fingerprint);
  // This rank starts a call under `tag`, having posted under call number `previous` before
  // (CallHistory::kNone: none): judges the messages waiting on the stream whose verdict this
  // changes, those from `previous` to this call's number.
  void reject_stray_messages(uint64_t tag, uint64_t previous);
  // A post under `tag` of the call `fingerprint` (send or receive): notes the call.
  void enter_call(uint64_t tag, uint64_t fingerprint) {
    uint64_t previous;
    if (calls_.enter(tag, fingerprint, &previous) && !unexpected_.empty()) {
      reject_stray_messages(tag, previous);
    }
  }

  const char* log_subsystem_;
  std::vector<bool> served_;  // by rank; empty: every peer (before connect)
  std::vector<Declined> declined_;
  uint32_t last_id_ = 0;  // ids fit 32 bits: verbs carries a recv id as immediate data
  std::unordered_map<uint64_t, std::list<OpPtr>> posted_;  // receives by tag, posting order
  // By tag. A list, not a deque: a deque's first block (512 bytes) per tag made an entry of
  // its own call cost four times more.
  std::unordered_map<uint64_t, std::list<std::unique_ptr<Unexpected>>> unexpected_;
  size_t unexpected_bytes_ = 0;    // charged: payloads plus kUnexpectedEntryBytes per entry
  size_t unexpected_entries_ = 0;  // for the text of a timeout at the bound
  // An entry joins or leaves the queue's charge (eager: its payload too).
  void charge(const Unexpected& message) {
    unexpected_bytes_ += (message.rendezvous ? 0 : message.length) + kUnexpectedEntryBytes;
    ++unexpected_entries_;
    judge_next_.store(true, std::memory_order_release);
  }
  // False while nothing waits in the queue since enter_collective last looked: its fast path.
  std::atomic<bool> judge_next_{true};
  void release(const Unexpected& message) {
    unexpected_bytes_ -= (message.rendezvous ? 0 : message.length) + kUnexpectedEntryBytes;
    --unexpected_entries_;
  }
  // The sentence a timeout adds while the queue may hold messages back (else empty).
  std::string unexpected_bound_note() const;
  std::unordered_map<uint64_t, OpPtr> awaiting_clearance_;  // sends, by send id
  std::unordered_map<uint64_t, OpPtr> awaiting_data_;       // receives, by recv id
  // Ids of sends cancelled by a failing call (cancel_failing), until their peer clears them
  // or the mesh fails.
  std::unordered_set<uint64_t> failing_sends_;
  Failure mesh_failure_;
  CallHistory calls_;            // the collective calls this rank posted under, per stream
  std::string unsurfaced_;       // a mismatch no call has raised yet (the destructor warns)
  bool failure_raised_ = false;  // a call of this rank has raised the mesh's failure
  // A mismatch this mesh found on a waiting message, which maybe no call of this rank sees.
  void owe_warning(const std::string& text) {
    if (!failure_raised_ && unsurfaced_.empty()) unsurfaced_ = text;
  }
  // A call of this rank raises a failure now: the context warns, the destructor need not.
  void failure_raised() {
    failure_raised_ = true;
    unsurfaced_.clear();
  }
};

}  // namespace gloo_lite::transport
