// The protocol on the queue pairs, always with the mesh mutex held:
//  - eager: a SEND of header + payload into one of the receiver's pre-posted buffers, allowed
//    only with a credit; credits come back piggybacked on every header, or in a credit-only
//    message once half the depth is owed;
//  - rendezvous: ready-to-send -> clear-to-send(address, rkey, recv id) -> RDMA WRITE WITH
//    IMMEDIATE straight into the receive buffer, the immediate carrying the recv id.
// Matching itself is the shared engine's (matching.h); this is the verbs wire around it.
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/tag_space.h"
#include "transport_ibverbs/ib_mesh.h"

namespace gloo_lite::ibverbs {
namespace {

enum WrKind : uint64_t { kRecvWr = 1, kSendWr = 2, kWriteWr = 3, kWriteChunkWr = 4 };
constexpr size_t kMaxWrite = size_t{1} << 30;  // one RDMA write per GiB
constexpr int kExtraSendWr = 16;

uint64_t wr_id(WrKind kind, int peer, uint32_t value) {
  return (uint64_t{kind} << 56) | (uint64_t(static_cast<uint32_t>(peer)) << 32) | value;
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

bool IbMesh::poll_cq() {
  bool any = false;
  ibv_wc wcs[32];
  while (true) {
    int n = ibv_poll_cq(cq_, 32, wcs);
    for (int i = 0; i < n; ++i) on_completion(wcs[i]);
    if (n > 0) any = true;
    if (n < 32) break;
  }
  return any;
}

void IbMesh::on_cq_event() {
  std::lock_guard<std::mutex> lock(mutex_);
  ibv_req_notify_cq(cq_, 0);  // re-arm before draining: nothing that arrives after is missed
  if (poll_cq()) completed_.notify_all();
}

void IbMesh::on_completion(const ibv_wc& wc) {
  auto kind = static_cast<WrKind>(wc.wr_id >> 56);
  int rank = static_cast<int>((wc.wr_id >> 32) & 0xffffff);
  auto value = static_cast<uint32_t>(wc.wr_id);
  if (rank < 0 || rank >= size_ || !peers_[rank]) return;
  Peer& peer = *peers_[rank];
  if (kind == kSendWr) peer.free_send_slots.push_back(static_cast<int>(value));
  if (kind != kRecvWr) --peer.send_queue_used;
  if (wc.status != IBV_WC_SUCCESS) {
    if (peer.failure.failed() || closed_) return;  // flushed after we stopped it
    std::string what = kind == kRecvWr ? "a receive" : kind == kSendWr ? "a send" : "an RDMA write";
    std::string hint =
        wc.status == IBV_WC_RETRY_EXC_ERR    ? " (no answer: the peer is dead or unreachable)"
        : wc.status == IBV_WC_REM_ACCESS_ERR ? " (the peer refused the write into its buffer)"
                                             : "";
    lose_pair(
        peer, "lost the connection to " + describe_peer(rank) + ": " + what +
                  " completed with status '" + ibv_wc_status_str(wc.status) + "'" + hint +
                  " (vendor error 0x" +
                  [&] {
                    char text[16];
                    std::snprintf(text, sizeof(text), "%x", wc.vendor_err);
                    return std::string(text);
                  }() +
                  ")");
    return;
  }
  switch (kind) {
    case kRecvWr:
      on_receive(peer, static_cast<int>(value), wc);
      break;
    case kSendWr:
    case kWriteChunkWr:
      break;
    case kWriteWr: {
      auto found = writing_.find(value);
      if (found != writing_.end()) {
        OpPtr op = found->second;
        writing_.erase(found);
        complete(op);
      }
      break;
    }
  }
  // Closing: post nothing more (a credit to a peer that already said goodbye would sit on its
  // destroyed QP and hold drain_posted_sends up until the retries give up).
  if (closed_) return;
  post_pending(peer);
  return_credits(peer);
}

void IbMesh::on_receive(Peer& peer, int slot, const ibv_wc& wc) {
  if (peer.failure.failed()) return;
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    uint32_t recv_id = ntohl(wc.imm_data);
    if (OpPtr op = take_receive_of(peer, recv_id, "an RDMA write with immediate")) {
      complete(op);
    } else if (!peer.failure.failed() && !mesh_failure().failed() && !cancelling(peer, recv_id)) {
      // Neither a receive this pair was cleared for, nor one cancelled while it wrote.
      protocol_error(peer, "an RDMA write with immediate named recv id " + std::to_string(recv_id) +
                               ", which no receive of this pair has");
    }
    if (!peer.failure.failed()) repost(peer, slot, true);
    return;
  }
  wire::Header h;
  if (wc.byte_len < wire::kHeaderBytes || !wire::decode(recv_slot(peer.rank, slot), &h)) {
    protocol_error(peer, "a corrupt message header (" + std::to_string(wc.byte_len) + " bytes)");
    return;
  }
  // Every field is untrusted input: what fails here fails the pair before anything is used.
  wire::Problem problem = wire::check(h, wc.byte_len, tuning_.slot_bytes);
  if (!problem) problem = wire::check_credits(h.credits, peer.peer_reposted, peer.data_sent);
  if (problem) {
    protocol_error(peer, wire::describe(h.type, problem));
    return;
  }
  if (peer.hello == (h.type == wire::Type::kHello)) {
    protocol_error(peer, std::string(wire::type_name(h.type)) +
                             (peer.hello ? " header after the handshake's hello"
                                         : " header before the handshake's hello"));
    return;
  }
  peer.peer_reposted = h.credits;
  if (h.type == wire::Type::kCredit) {
    repost(peer, slot, false);
    return;
  }
  // Not a message to match, and a cancel waits for it: it must not queue behind messages held
  // back for want of a receive, which that waiting thread might be the one to post.
  if (h.type == wire::Type::kReceiveCancelled) {
    if (!cancelling(peer, h.a)) {
      protocol_error(peer, "receive-cancelled header: recv id " + std::to_string(h.a) +
                               " names no receive this rank cancelled on this pair");
      return;
    }
    cancelling_.erase(h.a);
    repost(peer, slot, true);
    return;
  }
  // Once one message is held back, later ones wait behind it: matching never overtakes.
  if (!peer.held.empty() || !handle_message(peer, slot)) {
    peer.held.push_back(slot);
    return;
  }
  if (!peer.failure.failed()) repost(peer, slot, true);
}

bool IbMesh::handle_message(Peer& peer, int slot, bool past_bound) {
  wire::Header h;
  const uint8_t* buffer = recv_slot(peer.rank, slot);
  // Checked in on_receive already (a held message waits in our own buffer, unchanged).
  if (!wire::decode(buffer, &h)) {
    protocol_error(peer, "a corrupt message header");
    return true;
  }
  switch (h.type) {
    case wire::Type::kEager:
      return on_eager(peer, h, buffer + wire::kHeaderBytes, past_bound);
    case wire::Type::kReadyToSend:
      on_ready_to_send(peer.rank, h.a, h.b, h.c, h.fingerprint);
      return true;
    case wire::Type::kClearToSend:
      on_clear_to_send(peer, h);
      return true;
    case wire::Type::kSendCancelled:
      // Unknown: this rank had cancelled that receive meanwhile.
      if (OpPtr op = take_receive_of(peer, h.a, "a send-cancelled header")) {
        fail_op(op, ErrorKind::kConnection,
                describe_peer(peer.rank) + " cancelled its send of " + tags::describe(op->tag_) +
                    " after this rank matched it (the sender probably timed out)");
      }
      return true;
    case wire::Type::kCancelReceive:
      on_cancel_receive(peer, static_cast<uint32_t>(h.a));
      return true;
    case wire::Type::kMismatch: {
      // As on TCP: a mismatch breaks the whole context, not just this pair.
      std::string text = sender_mismatch_text(peer.rank, h.a, h.b, h.c);
      fail_pair(peer, ErrorKind::kMismatch, text);
      fail_all_operations(ErrorKind::kMismatch, text);
      return true;
    }
    case wire::Type::kHello:
      on_hello(peer, h);
      return true;
    case wire::Type::kCredit:
    case wire::Type::kReceiveCancelled:
      return true;  // taken in on_receive
  }
  return true;
}

bool IbMesh::on_eager(Peer& peer, const wire::Header& h, const uint8_t* payload, bool past_bound) {
  OpPtr op = match_posted(peer.rank, h.a);
  if (op) {
    // A message of another call aborts the mesh: nothing is copied.
    if (!same_call(peer.rank, op, h.fingerprint)) return true;
    if (op->bytes_ != h.b) {
      reject_size(peer.rank, op, h.b);
      return true;
    }
    if (h.b > 0) std::memcpy(op->data_, payload, h.b);
    complete(op);
    return true;
  }
  if (!past_bound && !unexpected_has_room(h.b)) return false;
  auto message = new_unexpected(peer.rank, h.b, h.fingerprint);
  if (h.b > 0) std::memcpy(message->payload.data(), payload, h.b);
  queue_unexpected(h.a, std::move(message));
  return true;
}

void IbMesh::on_clear_to_send(Peer& peer, const wire::Header& h) {
  auto recv_id = static_cast<uint32_t>(h.c);
  OpPtr op = take_send_awaiting_clearance(h.a);
  // A send cancelled by a failing call gets no answer: this rank's abort follows.
  if (!op && answer_for_lost_send(h.a) == LostSendAnswer::kNothing) return;
  if (!op) {
    queue_control(peer, wire::Type::kSendCancelled, recv_id, 0, 0);
    return;
  }
  // Only the peer the send is for may clear it: another one would get its data.
  if (op->peers_[0] != peer.rank) {
    std::string text = "clear-to-send header: send id " + std::to_string(h.a) +
                       " names a send to " + describe_peer(op->peers_[0]);
    fail_op(op, ErrorKind::kConnection,
            "protocol error from " + describe_peer(peer.rank) + ": " + text);
    protocol_error(peer, text);
    return;
  }
  writing_[op->id_] = op;
  Outgoing write;
  write.header = {wire::Type::kEager, 0, 0, 0, recv_id};
  write.op = op;
  write.write = true;
  write.remote_addr = h.b;
  write.rkey = static_cast<uint32_t>(h.c >> 32);
  queue(peer, std::move(write));
}

void IbMesh::on_hello(Peer& peer, const wire::Header& h) {
  uint64_t ranks =
      uint64_t(static_cast<uint32_t>(peer.rank)) | (uint64_t(static_cast<uint32_t>(rank_)) << 32);
  if (h.a != context_id_ || h.b != ranks || h.c != static_cast<uint64_t>(size_)) {
    lose_pair(peer, "ibverbs handshake: the queue pair of " + describe_peer(peer.rank) +
                        " presented (hello header) context id " + hex(h.a) + ", ranks " + hex(h.b) +
                        ", size " + std::to_string(h.c) + "; expected context " + hex(context_id_) +
                        ", ranks " + hex(ranks) + ", size " + std::to_string(size_) +
                        " (a stale address in the store?)");
    return;
  }
  peer.hello = true;
  completed_.notify_all();
}

void IbMesh::protocol_error(Peer& peer, const std::string& what) {
  lose_pair(peer, "protocol error from " + describe_peer(peer.rank) + ": " + what +
                      "; every pair of this mesh is closed (a peer of another version, or a "
                      "corrupt message)");
}

OpPtr IbMesh::take_receive_of(Peer& peer, uint64_t recv_id, const char* what) {
  OpPtr op = take_receive_awaiting_data(recv_id);
  if (!op || op->source_ == peer.rank) return op;
  std::string text = std::string(what) + " named recv id " + std::to_string(recv_id) +
                     ", a receive from " + describe_peer(op->source_);
  fail_op(op, ErrorKind::kConnection,
          "protocol error from " + describe_peer(peer.rank) + ": " + text);
  protocol_error(peer, text);
  return nullptr;
}

bool IbMesh::cancelling(const Peer& peer, uint64_t recv_id) const {
  auto found = cancelling_.find(recv_id);
  return found != cancelling_.end() && found->second == peer.rank;
}

void IbMesh::repost(Peer& peer, int slot, bool data) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(recv_slot(peer.rank, slot)),
              static_cast<uint32_t>(tuning_.slot_bytes), buffers_mr_->lkey};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = wr_id(kRecvWr, peer.rank, static_cast<uint32_t>(slot));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  int rc = ibv_post_recv(peer.qp, &wr, &bad);
  if (rc != 0) {
    if (!peer.failure.failed()) {
      lose_pair(peer, "ibverbs: ibv_post_recv for " + describe_peer(peer.rank) +
                          " failed: " + std::strerror(rc));
    }
    return;
  }
  if (data) ++peer.reposted;
}

void IbMesh::resume_held_messages() {
  for (auto& peer : peers_) {
    if (!peer || peer->held.empty()) continue;
    while (!peer->held.empty() && !peer->failure.failed()) {
      int slot = peer->held.front();
      if (!handle_message(*peer, slot)) break;
      peer->held.pop_front();
      if (!peer->failure.failed()) repost(*peer, slot, true);
    }
    post_pending(*peer);
    return_credits(*peer);
  }
}

void IbMesh::take_in_held_past_bound(Peer& peer) {
  while (!peer.held.empty() && !peer.failure.failed()) {
    int slot = peer.held.front();
    peer.held.pop_front();
    handle_message(peer, slot, /*past_bound=*/true);  // not reposted: the pair is closing
  }
}

void IbMesh::queue(Peer& peer, Outgoing message) {
  if (!peer.open && !message.overdraft) {
    if (message.op) fail_op(message.op, peer.failure);
    return;
  }
  peer.pending.push_back(std::move(message));
  post_pending(peer);
}

void IbMesh::queue_control(Peer& peer, wire::Type type, uint64_t a, uint64_t b, uint64_t c) {
  Outgoing message;
  message.header = {type, 0, a, b, c};
  queue(peer, std::move(message));
}

void IbMesh::post_pending(Peer& peer) {
  while (!peer.pending.empty()) {
    if (!post_one(peer, peer.pending.front())) return;
    peer.pending.pop_front();
  }
}

void IbMesh::post_send_slot(Peer& peer, int slot, size_t bytes) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(send_slot(peer.rank, slot)), static_cast<uint32_t>(bytes),
              buffers_mr_->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wr_id(kSendWr, peer.rank, static_cast<uint32_t>(slot));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ++peer.send_queue_used;
  int rc = ibv_post_send(peer.qp, &wr, &bad);
  if (rc != 0) {
    --peer.send_queue_used;
    peer.free_send_slots.push_back(slot);
    lose_pair(peer, "ibverbs: ibv_post_send to " + describe_peer(peer.rank) +
                        " failed: " + std::strerror(rc));
  }
}

bool IbMesh::post_one(Peer& peer, Outgoing& message) {
  if (!message.overdraft && (peer.failure.failed() || credits(peer) <= 0)) return false;
  return message.write ? post_write(peer, message) : post_message(peer, message);
}

bool IbMesh::post_write(Peer& peer, Outgoing& message) {
  const int send_depth = slots_ + kExtraSendWr;
  const OpPtr& op = message.op;
  size_t chunks = std::max<size_t>(1, (op->bytes_ + kMaxWrite - 1) / kMaxWrite);
  if (peer.send_queue_used + static_cast<int>(chunks) > send_depth) return false;
  uint32_t lkey = 0;
  try {
    lkey = registration(*op)->lkey;
  } catch (const Error& e) {
    // The receiver waits for this write: tell it the send is off instead.
    uint64_t recv_id = message.header.c;
    writing_.erase(op->id_);
    fail_op(op, ErrorKind::kConnection, e.what());
    message = Outgoing{};
    message.header = {wire::Type::kSendCancelled, 0, recv_id, 0, 0};
    return post_one(peer, message);
  }
  auto recv_id = static_cast<uint32_t>(message.header.c);
  for (size_t i = 0; i < chunks; ++i) {
    size_t offset = i * kMaxWrite;
    size_t length = std::min(kMaxWrite, op->bytes_ - offset);
    bool last = i + 1 == chunks;
    ibv_sge sge{reinterpret_cast<uintptr_t>(op->data_ + offset), static_cast<uint32_t>(length),
                lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = wr_id(last ? kWriteWr : kWriteChunkWr, peer.rank, static_cast<uint32_t>(op->id_));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(recv_id);
    wr.wr.rdma.remote_addr = message.remote_addr + offset;
    wr.wr.rdma.rkey = message.rkey;
    ++peer.send_queue_used;
    int rc = ibv_post_send(peer.qp, &wr, &bad);
    if (rc != 0) {
      --peer.send_queue_used;
      lose_pair(peer, "ibverbs: posting an RDMA write to " + describe_peer(peer.rank) +
                          " failed: " + std::strerror(rc));
      return true;
    }
  }
  ++peer.data_sent;  // the immediate consumes one of the peer's receive buffers
  return true;
}

bool IbMesh::post_message(Peer& peer, Outgoing& message) {
  const int send_depth = slots_ + kExtraSendWr;
  if (peer.free_send_slots.empty() || peer.send_queue_used >= send_depth) return false;
  int slot = peer.free_send_slots.back();
  peer.free_send_slots.pop_back();
  uint8_t* buffer = send_slot(peer.rank, slot);
  wire::Header h = message.header;
  h.credits = peer.reposted;
  peer.advertised = peer.reposted;
  wire::encode(h, buffer);
  size_t bytes = wire::kHeaderBytes;
  if (h.type == wire::Type::kEager && message.op) {
    if (h.b > 0) std::memcpy(buffer + wire::kHeaderBytes, message.op->data_, h.b);
    bytes += h.b;
  }
  ++peer.data_sent;
  post_send_slot(peer, slot, bytes);
  if (message.op && h.type == wire::Type::kEager) complete(message.op);  // the buffer is free again
  return true;
}

void IbMesh::return_credits(Peer& peer) {
  if (peer.failure.failed() || !peer.open) return;
  if (static_cast<int32_t>(peer.reposted - peer.advertised) < tuning_.depth / 2) return;
  if (peer.free_send_slots.empty() || peer.send_queue_used >= slots_ + kExtraSendWr) return;
  int slot = peer.free_send_slots.back();
  peer.free_send_slots.pop_back();
  wire::Header h{wire::Type::kCredit, peer.reposted, 0, 0, 0};
  peer.advertised = peer.reposted;
  wire::encode(h, send_slot(peer.rank, slot));
  post_send_slot(peer, slot, wire::kHeaderBytes);
}

void IbMesh::send_eager(const OpPtr& op) {
  Outgoing message;
  message.header = {wire::Type::kEager, 0, op->tag_, op->bytes_, 0, op->fingerprint_};
  message.op = op;
  queue(*peers_[op->peers_[0]], std::move(message));
}

void IbMesh::send_ready_to_send(const Op& op) {
  Outgoing message;
  message.header = {wire::Type::kReadyToSend, 0, op.tag_, op.bytes_, op.id_, op.fingerprint_};
  queue(*peers_[op.peers_[0]], std::move(message));
}

// The receiver registers its buffer only now, when a sender is about to write into it.
void IbMesh::send_clear_to_send(int peer, const OpPtr& op, uint64_t send_id) {
  uint32_t rkey = 0;
  try {
    rkey = registration(*op)->rkey;
  } catch (const Error& e) {
    fail_op(op, ErrorKind::kConnection, e.what());
    lose_pair(*peers_[peer], e.what());
    return;
  }
  queue_control(*peers_[peer], wire::Type::kClearToSend, send_id,
                reinterpret_cast<uintptr_t>(op->data_), op->id_ | (uint64_t{rkey} << 32));
}

// The notice goes out even without a credit (overdraft): the pair closes right after, and the
// queue pair stays up long enough to carry it.
void IbMesh::send_mismatch_and_close(int peer, const Op& op, uint64_t sent,
                                     const std::string& text) {
  Outgoing notice;
  notice.header = {wire::Type::kMismatch, 0, op.tag_, op.bytes_, sent};
  notice.overdraft = true;
  queue(*peers_[peer], std::move(notice));
  fail_pair(*peers_[peer], ErrorKind::kMismatch, text, /*keep_qp=*/true);
}

}  // namespace gloo_lite::ibverbs
