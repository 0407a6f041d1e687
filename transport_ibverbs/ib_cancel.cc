// Cancel on the queue pairs. What needs care is a rendezvous, where the buffer is in the hands
// of the RDMA engine rather than ours:
//  - a receive that gave clear-to-send: its sender holds our rkey and may write at any moment.
//    We ask it to write nothing more (cancel-receive) and wait for its answer
//    (receive-cancelled). RC delivers in order, so the answer arrives after every write the
//    sender had already posted. The sender drops a write it has not posted yet and completes
//    that send: the message went to a receive that was cancelled, as on TCP, where the data
//    of a cancelled receive is read and discarded.
//  - a send whose RDMA write waits for a credit: dropped, and the receiver told
//    (send-cancelled); once posted, the HCA reads the buffer until the write completes, so
//    cancel waits for that completion.
// The queue pair stays healthy either way. Only when no answer comes within kAnswerWait (a
// live peer answers at once; a dead one is found by its lifeline well before) is the queue
// pair stopped instead, the one other way to keep the buffer from being touched.
#include <chrono>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/log.h"
#include "transport_ibverbs/ib_mesh.h"

namespace gloo_lite::ibverbs {
namespace {

constexpr std::chrono::milliseconds kAnswerWait{5000};
// Between two looks at the CQ for the answer: fixed, the answer is one round trip away.
constexpr std::chrono::microseconds kAnswerPoll{100};

}  // namespace

void IbMesh::cancel_on_wire(const OpPtr& op, bool cleared, bool failing) {
  if (op->kind_ == Op::Kind::kRecv) {
    if (cleared && op->source_ >= 0) stop_receive(*peers_[op->source_], op->id_);
    return;
  }
  Peer& peer = *peers_[op->peers_[0]];
  // Not handed to the HCA yet (an eager message, or a write waiting for a credit): drop it.
  for (auto it = peer.pending.begin(); it != peer.pending.end(); ++it) {
    if (it->op != op) continue;
    bool write = it->write;
    uint64_t recv_id = it->header.c;
    peer.pending.erase(it);
    if (write) {
      writing_.erase(op->id_);
      // A failing call's abort follows and tells the receiver why (MatchingMesh::cancel_failing).
      if (!failing) queue_control(peer, wire::Type::kSendCancelled, recv_id, 0, 0);
    }
    return;
  }
  if (op->id_ != 0 && writing_.count(op->id_) > 0) stop_write(peer, op->id_);
}

void IbMesh::stop_receive(Peer& peer, uint64_t recv_id) {
  if (!peer.open) return;  // its queue pair is stopped already
  int rank = peer.rank;
  cancelling_[recv_id] = rank;
  LOG_DEBUG("ibverbs", "rank " << rank_ << " cancels receive " << recv_id
                               << " after clear-to-send; "
                               << "asking " << describe_peer(rank) << " to write nothing more");
  queue_control(peer, wire::Type::kCancelReceive, recv_id, 0, 0);
  if (serve_until([&] { return cancelling_.count(recv_id) == 0; })) return;
  cancelling_.erase(recv_id);
  fail_pair(peer, ErrorKind::kConnection,
            "rank " + std::to_string(rank_) + " cancelled a receive from " + describe_peer(rank) +
                " after telling it where to write, and the peer did not confirm within " +
                format_ms(kAnswerWait) +
                " that it writes nothing more; the queue pair was closed so that the buffer "
                "can no longer be written");
}

void IbMesh::stop_write(Peer& peer, uint64_t send_id) {
  LOG_DEBUG("ibverbs", "rank " << rank_ << " cancels send " << send_id
                               << " during its RDMA write; waiting for the write to complete");
  if (serve_until([&] { return writing_.count(send_id) == 0; })) return;
  writing_.erase(send_id);
  fail_pair(peer, ErrorKind::kConnection,
            "rank " + std::to_string(rank_) + " cancelled a send to " + describe_peer(peer.rank) +
                " during its RDMA write, which did not complete within " + format_ms(kAnswerWait) +
                "; the queue pair was closed");
}

// The answers come through the CQ: served here, and by the progress thread while the mutex is
// let go between polls. A failing pair ends the wait too: fail_pair forgets the entries
// `done` watches, after stopping the queue pair.
bool IbMesh::serve_until(const std::function<bool()>& done) {
  Deadline deadline = Deadline::after(kAnswerWait);
  Backoff pause(kAnswerPoll, kAnswerPoll);
  while (!done()) {
    if (deadline.expired()) return false;
    if (poll_cq()) continue;
    // mutex_ is held by our caller's lock; it is ours again before we return.
    mutex_.unlock();
    pause.sleep(deadline);
    mutex_.lock();
  }
  return true;
}

void IbMesh::on_cancel_receive(Peer& peer, uint64_t recv_id) {
  for (auto it = peer.pending.begin(); it != peer.pending.end(); ++it) {
    if (!it->write || it->header.c != recv_id) continue;
    OpPtr op = std::move(it->op);
    peer.pending.erase(it);
    writing_.erase(op->id_);
    complete(op);
    break;
  }
  // Queued behind every write already posted to this peer: it arrives after them.
  queue_control(peer, wire::Type::kReceiveCancelled, recv_id, 0, 0);
}

}  // namespace gloo_lite::ibverbs
