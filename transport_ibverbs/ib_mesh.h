// Internal: the ibverbs device and one context's mesh of RC queue pairs. Matching, requests
// and waiting rules are the shared engine's (gloo_lite/transport/matching.h); this adds the
// queue pairs, credits and RDMA.
//
// Locking: the engine's mutex guards all of the mesh's state; completions are processed under it
// both by a waiting caller (who polls the mesh's CQ itself) and by the device's progress thread
// (who sleeps on the device's completion channel and serves what arrives while nobody waits).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gloo_lite/base/wait_policy.h"
#include "gloo_lite/transport/matching.h"
#include "transport_ibverbs/ib_device.h"
#include "transport_ibverbs/ib_select.h"
#include "transport_ibverbs/mr_cache.h"
#include "transport_ibverbs/qp.h"
#include "transport_ibverbs/wire.h"

namespace gloo_lite::ibverbs {

using transport::ErrorKind;
using transport::Failure;
using transport::Op;
using transport::OpPtr;

class IbMesh;

struct Tuning {
  int depth = 32;  // credited receive buffers per peer (GLOO_LITE_IB_RECV_DEPTH)
  size_t slot_bytes =
      8192;             // size of one eager buffer, header included (GLOO_LITE_IB_BUFFER_BYTES)
  int timeout = 17;     // RC ack timeout exponent (GLOO_LITE_IB_TIMEOUT)
  int retry_count = 7;  // GLOO_LITE_IB_RETRY_COUNT
  // How long a waiter polls the CQ before it sleeps (GLOO_LITE_IB_SPIN_US; the whole wait
  // with GLOO_LITE_IB_BUSY_POLL): the bound of its WaitPolicy.
  std::chrono::microseconds spin{0};
};

class IbDevice : public transport::Device, public std::enable_shared_from_this<IbDevice> {
 public:
  IbDevice(PortChoice port, const DeviceOptions& options);
  ~IbDevice() override;
  std::string name() const override;
  std::unique_ptr<transport::Mesh> create_mesh(int rank, int size,
                                               const transport::MeshOptions& options) override;

  const PortChoice& port() const { return port_; }
  ibv_context* context() const { return port_.context; }
  ibv_pd* pd() const { return pd_; }
  ibv_comp_channel* channel() const { return channel_; }
  MrCache& cache() { return *cache_; }
  const Tuning& tuning() const { return tuning_; }
  transport::Device& control_device() { return *control_; }
  LocalPort local_port(uint32_t psn) const;

  void add_mesh(IbMesh* mesh);
  void remove_mesh(IbMesh* mesh);

 private:
  void progress();

  PortChoice port_;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  std::unique_ptr<MrCache> cache_;
  Tuning tuning_;
  std::shared_ptr<transport::Device> control_;  // TCP: handshake, liveness and abort messages
  std::mutex meshes_mutex_;
  std::set<IbMesh*> meshes_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A region registered lazily: eager messages travel through the mesh's own registered buffers,
// so ibv_reg_mr (through the cache) happens only when a rendezvous needs an lkey or rkey.
class IbMemory : public transport::Memory {
 public:
  IbMemory(void* data, size_t bytes, transport::MemoryKind kind, MrCache* cache)
      : Memory(data, bytes, kind), cache_(cache) {}
  ~IbMemory() override {
    if (mr_ != nullptr) cache_->release(mr_);
  }
  ibv_mr* mr() const {
    if (mr_ == nullptr) mr_ = cache_->acquire(data(), bytes());
    return mr_;
  }

 private:
  MrCache* cache_;
  mutable ibv_mr* mr_ = nullptr;
};

// The registration behind an op's memory (made on first use, through the cache).
inline ibv_mr* registration(const Op& op) { return static_cast<const IbMemory*>(op.memory_)->mr(); }

// A message waiting for a credit, a send buffer or send-queue room.
struct Outgoing {
  wire::Header header;
  OpPtr op;  // eager: completed once copied and posted; write: the send being written
  bool write = false;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  bool overdraft = false;  // a last notice before closing: sent even without a credit
};

struct Peer {
  int rank = 0;
  ibv_qp* qp = nullptr;
  std::string control_address;
  RemoteQp remote;
  bool open = false;
  bool hello = false;
  Failure failure;                 // why it closed
  transport::RequestPtr lifeline;  // control-channel receive that fails when the peer dies

  // Credits: a message that lands in a receive buffer may be posted only while
  // depth + peer_reposted - data_sent > 0 (32-bit wrapping counters).
  uint32_t data_sent = 0;
  uint32_t peer_reposted = 0;
  uint32_t reposted = 0;    // our receive buffers this peer used and we reposted
  uint32_t advertised = 0;  // `reposted` as last told to the peer
  std::vector<int> free_send_slots;
  int send_queue_used = 0;
  std::deque<Outgoing> pending;
  std::deque<int> held;  // receive slots held back (unexpected queue full), in arrival order
};

class IbMesh : public transport::MatchingMesh {
 public:
  IbMesh(std::shared_ptr<IbDevice> device, int rank, int size,
         const transport::MeshOptions& options);
  ~IbMesh() override;

  // Side channel, GID, LID, MTU, PSN and one QPN per rank (ib_connect.cc, with connect()).
  std::string address() const override;
  void connect(const std::vector<std::string>& addresses, uint64_t context_id,
               const Deadline& deadline) override;
  std::string describe_peer(int peer) const override;  // "rank 3 (10.0.0.2:41000, rxe0 qpn 17)"
  // Lazy: ibv_reg_mr (through the device's cache) only once a rendezvous needs the keys.
  std::unique_ptr<transport::Memory> register_memory(void* data, size_t bytes,
                                                     transport::MemoryKind kind) override;
  // Host memory; CUDA memory where the peer-memory module is loaded (GPUDirect RDMA).
  bool can_register(transport::MemoryKind kind) const override;
  // The waiting thread polls the CQ itself; it sleeps only when the CQ is empty.
  bool wait_until(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
                  const Deadline& until) override;
  // The reason travels on the side channel: it needs no credit and survives a stuck QP.
  void abort(const std::string& reason) override;

  // --- called by the device's progress thread ---
  void on_cq_event();      // re-arms the CQ and drains it
  void check_lifelines();  // fails the context when the side channel reports a dead peer
  ibv_cq* cq() const { return cq_; }

 private:
  // Liveness, for the engine's matching: a closed pair keeps why it closed.
  bool peer_open(int peer) const override { return peers_[peer] && peers_[peer]->open; }
  const Failure& peer_failure(int peer) const override { return peers_[peer]->failure; }
  // Op::test(): completions are only seen by polling the CQ.
  void make_progress() override { poll_cq(); }

  // connect()'s steps (ib_connect.cc). The peer's side-channel address, its QP's remote end
  // taken from its published address.
  std::string read_address(Peer& peer, const std::string& address);
  // Every QP to RTS, then a byte over the side channel each way: the peer's QPs are ready too.
  void connect_queue_pairs(const Deadline& deadline);
  // A hello over every QP; until each peer's hello came back.
  void exchange_hellos(uint64_t context_id, const Deadline& deadline);

  // ib_protocol.cc (mutex_ held)
  bool poll_cq();  // true when something completed
  void on_completion(const ibv_wc& wc);
  void on_receive(Peer& peer, int slot, const ibv_wc& wc);
  // false: hold it (unexpected queue full); `past_bound` queues an eager message regardless.
  bool handle_message(Peer& peer, int slot, bool past_bound = false);
  // handle_message's cases with a body: `payload` follows the header in our receive buffer.
  bool on_eager(Peer& peer, const wire::Header& h, const uint8_t* payload, bool past_bound);
  void on_clear_to_send(Peer& peer, const wire::Header& h);  // the RDMA write is queued
  void on_hello(Peer& peer, const wire::Header& h);          // checked against this mesh
  // Takes in the messages held back in their receive buffers, oldest first.
  void resume_held_messages() override;
  // A peer said goodbye: what it sent before is ours to deliver, so the messages held back
  // for it go to the unexpected queue past its bound (by at most the pair's receive buffers)
  // instead of being dropped with the pair.
  void take_in_held_past_bound(Peer& peer);
  void repost(Peer& peer, int slot, bool data);
  // A header (or write) that breaks the protocol: the mesh fails (every pair) naming `what`.
  void protocol_error(Peer& peer, const std::string& what);
  // The receive awaiting data under `recv_id` when it is one from `peer`, removed; nullptr
  // when none is. One from another peer is failed with a protocol error (`what` names the
  // message that named it): no peer completes another's receive.
  OpPtr take_receive_of(Peer& peer, uint64_t recv_id, const char* what);
  // Whether this rank cancelled receive `recv_id` of `peer` and awaits the answer.
  bool cancelling(const Peer& peer, uint64_t recv_id) const;
  // The engine's send_* hooks: each queues one message, posted once a credit allows.
  void send_eager(const OpPtr& op) override;
  void send_ready_to_send(const Op& op) override;
  void send_clear_to_send(int peer, const OpPtr& op, uint64_t send_id) override;
  void send_mismatch_and_close(int peer, const Op& op, uint64_t sent,
                               const std::string& text) override;
  void queue(Peer& peer, Outgoing message);
  void queue_control(Peer& peer, wire::Type type, uint64_t a, uint64_t b, uint64_t c);
  void post_pending(Peer& peer);
  bool post_one(Peer& peer, Outgoing& message);
  bool post_write(Peer& peer, Outgoing& message);    // a rendezvous payload, in RDMA writes
  bool post_message(Peer& peer, Outgoing& message);  // a header (and eager payload) in a slot
  void return_credits(Peer& peer);
  void post_send_slot(Peer& peer, int slot, size_t bytes);
  // ib_cancel.cc (mutex_ held)
  void cancel_on_wire(const OpPtr& op, bool cleared, bool failing) override;
  void stop_receive(Peer& peer, uint64_t recv_id);
  void stop_write(Peer& peer, uint64_t send_id);
  bool serve_until(const std::function<bool()>& done);  // false: no answer in time
  void on_cancel_receive(Peer& peer, uint64_t recv_id);
  // ib_mesh.cc; takes mutex_: waits (bounded) until every posted send has completed.
  void drain_posted_sends(const Deadline& deadline);
  // ib_mesh.cc (mutex_ held)
  void fail_pair(Peer& peer, ErrorKind kind, const std::string& message, bool keep_qp = false);
  void fail_mesh(ErrorKind kind, const std::string& message);
  void lose_pair(Peer& peer, const std::string& message, ErrorKind kind = ErrorKind::kConnection);
  // A collective mismatch found here: the side channel tells the peers (as a MismatchError),
  // then the mesh fails.
  void abort_locked(ErrorKind kind, const std::string& reason) override;
  int32_t credits(const Peer& peer) const;
  uint8_t* recv_slot(int peer, int slot) const;
  uint8_t* send_slot(int peer, int slot) const;

  std::shared_ptr<IbDevice> device_;
  Tuning tuning_;
  // How a waiter polls the CQ before sleeping: yielding between polls, up to tuning_.spin
  // (0 by default: sleep at once). Each waiter adapts a copy and stores it back.
  WaitPolicy wait_policy_;
  int slots_;  // receive (and send) buffers per peer: depth + reserve
  uint32_t psn_;
  uint64_t context_id_ = 0;
  std::unique_ptr<transport::Mesh> control_;
  ibv_cq* cq_ = nullptr;
  std::unique_ptr<uint8_t[]> buffers_;  // per peer: slots_ receive then slots_ send buffers
  size_t buffers_bytes_ = 0;
  ibv_mr* buffers_mr_ = nullptr;
  std::vector<std::unique_ptr<Peer>> peers_;

  // Sends whose RDMA write is posted, by send id (the engine holds them until clear-to-send).
  std::unordered_map<uint64_t, OpPtr> writing_;
  // Receives cancelled after clear-to-send whose sender has not yet confirmed that it writes
  // nothing more: recv id -> peer rank.
  std::unordered_map<uint64_t, int> cancelling_;
  bool closed_ = false;
  std::vector<uint8_t> lifeline_bytes_;
  std::unique_ptr<transport::Memory> lifeline_memory_;
};

}  // namespace gloo_lite::ibverbs
