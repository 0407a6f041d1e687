// Internal: one context's shared-memory pairs. Matching, requests and the waiting rules are the
// shared engine's (gloo_lite/transport/matching.h); this adds the segment, its rings and the
// single copy of large messages (docs/transport-shm.md). There is no progress thread: whoever
// waits on the mesh (or tests a request) reads the inboxes and pushes queued records, under the
// engine's one mutex, and sleeps on the segment's doorbell futex.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/shared_memory.h"
#include "gloo_lite/base/wait_policy.h"
#include "gloo_lite/transport/abort_cause.h"
#include "gloo_lite/transport/matching.h"
#include "transport_shm/address.h"
#include "transport_shm/segment.h"

namespace gloo_lite::shm {

using transport::ErrorKind;
using transport::Failure;
using transport::Op;
using transport::OpPtr;
using transport::Unexpected;

// A record waiting for room in the peer's ring. A data stream (the pipelined fallback of a
// large message) is one entry that leaves as many chunks.
struct OutRecord {
  Record record{};
  const uint8_t* payload = nullptr;  // the user's buffer (eager, data) until written
  size_t payload_bytes = 0;
  OpPtr op;             // completed once written (eager) or once the whole stream is
  bool stream = false;  // kData chunks of op's buffer from `offset`
  size_t offset = 0;
};

struct Pair {
  int peer = -1;
  bool served = false;  // an address was given: this mesh connects to that peer
  bool open = false;
  Failure failure;
  Address address;
  std::unique_ptr<SharedMemory> remote;  // the peer's segment
  SegmentHeader* remote_header = nullptr;
  bool proven = false;    // with a secret: its proof in our segment was checked (shm_auth.h)
  RingWriter writer;      // our inbox in the peer's segment
  RingView inbox;         // its inbox in our segment
  uint64_t consumed = 0;  // our tail of that inbox (the shared word is only published)
  std::deque<OutRecord> out;
  bool close_sent = false;  // our close notice is in the peer's segment
  bool closing = false;     // the peer closed or exited: take in all it left in the ring
  bool cma = false;         // process_vm_readv from the peer works (the connect probe)
  std::unique_ptr<ProcessWatch> watch;  // the peer's process
  // Announced large messages from this peer not matched yet (send id -> its buffer address),
  // and those of them the peer took back before they were matched.
  std::unordered_map<uint64_t, uint64_t> announced;
  std::unordered_map<uint64_t, bool> cancelled;  // send id -> by a failing call
  uint64_t cancels_written = 0;                  // our cancel_count in the peer's segment
  uint64_t cancels_read = 0;                     // how many of the peer's cancels we acted on
};

// A large message this rank copies straight from the sender's memory (CMA).
struct Pull {
  int peer;
  OpPtr op;
  uint64_t send_id;
  uint64_t address;
  bool cancelled = false;
  bool failing = false;  // cancelled by a failing call (kFailingCancel)
};

// A receive filled by data records (the fallback), by recv id.
struct Incoming {
  OpPtr op;
  size_t received = 0;
};

struct MeshSettings {
  uint32_t ring_bytes = 0;
  size_t eager_bytes = 0;
  size_t unexpected_bytes = 0;
  bool cma = true;
  int64_t spin_us = 0;
};
MeshSettings settings_from_knobs(const transport::MeshOptions& options);

class ShmMesh : public transport::MatchingMesh {
 public:
  ShmMesh(int rank, int size, const MeshSettings& settings);
  ~ShmMesh() override;

  std::string address() const override { return address_.encode(); }
  // shm_connect.cc: maps every served peer's segment and verifies it; done when each peer has
  // mapped ours.
  void connect(const std::vector<std::string>& addresses, uint64_t context_id,
               const Deadline& deadline) override;
  bool registers_by_pointer() const override { return true; }
  std::unique_ptr<transport::Memory> register_memory(void* data, size_t bytes,
                                                     transport::MemoryKind kind) override;
  bool wait_until(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
                  const Deadline& until) override;
  void abort(const std::string& reason) override;
  std::string describe_peer(int peer) const override;  // "rank 3 (pid 4711)"
  // Reads the close and abort notices no waiter has read yet first: a rank outside any wait
  // (a late rank setting up a host segment) learns of a peer's abort when it looks.
  transport::AbortCause failure_cause() override;
  bool has_work_for_waiter() override;  // for a mixed mesh's wait slices

 private:
  bool peer_open(int peer) const override { return pairs_[peer] && pairs_[peer]->open; }
  const Failure& peer_failure(int peer) const override;

  // shm_connect.cc, the connect's steps in order.
  std::string me() const;                    // "rank 2 of 8"
  static std::string who(const Pair& pair);  // "rank 3 (pid 4711, fd 9)"
  // A pair per peer; served where an address is given. Returns how many are served.
  int make_pairs(const std::vector<std::string>& addresses);
  // Reserves every served peer's inbox in our segment; why each refused one failed, by peer.
  std::vector<std::string> reserve_inboxes();
  void publish_segment(uint64_t context_id);  // the context id, auth, then ready
  void give_back(Pair& pair, const std::string& why, bool here);
  [[noreturn]] void reject_segment(const Pair& pair, const std::string& why) const;
  // Maps the peer's segment, checks what its address promises and waits until it is ready.
  SegmentHeader* map_peer(Pair& pair, const Deadline& deadline);
  // Checks the ready header and gives the peer's layout as checked; false: the peer refused our
  // inbox and the pair was given back.
  bool check_peer_header(Pair& pair, const SegmentHeader& header, uint64_t context_id,
                         Layout* layout);
  // Attaches to our inbox in the peer's segment (laid out as checked), probes CMA and says
  // hello there.
  void say_hello(Pair& pair, SegmentHeader& header, const Layout& layout, uint64_t context_id);
  // Until every served peer said hello in our segment (and proved the secret).
  void await_hellos(uint64_t context_id, const Deadline& deadline);
  bool hello_heard(Pair& pair, uint64_t context_id);

  // shm_protocol.cc: the engine's hooks and the records.
  void send_eager(const OpPtr& op) override;
  void send_ready_to_send(const Op& op) override;
  void send_clear_to_send(int peer, const OpPtr& op, uint64_t send_id) override;
  void send_mismatch_and_close(int peer, const Op& op, uint64_t sent,
                               const std::string& text) override;
  void resume_held_messages() override {}  // the next drain re-checks the room
  void make_progress() override;
  // A call in a host segment reads no ring: its stray messages are taken in (and judged) here.
  void take_in_arrivals() override { progress(); }
  void take_in_notice(int peer) override;  // shm_mesh.cc
  // Unread records in any inbox (shm_mesh.cc); out of band notices are left to the waiters.
  bool arrivals_pending() override;
  void wake_polling_waiter() override;
  // Reads every inbox, copies announced messages, pushes queued records.
  void progress();
  // Dispatches what `pair`'s inbox holds, then acts on its close notice.
  // True when everything that arrived was consumed (and a close notice acted on).
  bool drain(Pair& pair);
  // One record; false: stop reading this inbox for now (held back, or the pair closed).
  bool dispatch(Pair& pair, const Record& record, const uint8_t* payload);
  // dispatch's cases with a body, and the protocol error of a malformed record (false).
  bool on_eager_record(Pair& pair, const Record& record, const uint8_t* payload);
  bool on_clear_to_send_record(Pair& pair, const Record& record);
  bool on_data_record(Pair& pair, const Record& record, const uint8_t* payload);
  bool reject_record(Pair& pair, const Record& record);
  void on_close_notice(Pair& pair, CloseState state);
  // A record from `pair` named an operation with another peer: fails `op` (if it was taken)
  // and the pair; false.
  bool reject_foreign_id(Pair& pair, const OpPtr& op, const char* what);
  // Acts on the cancels the peer published out of band; false: the pair closed.
  bool read_cancels(Pair& pair);
  void on_cancel(Pair& pair, uint64_t marked_id);  // a send id, maybe | kFailingCancel
  // Tells the peer that `send_id` is taken back, out of band; closes the pair (with the close
  // notice) when the peer has not read the cancels before.
  void write_cancel(Pair& pair, uint64_t send_id);
  void run_pulls();
  void finish_pull(Pull& pull);
  void queue_record(Pair& pair, OutRecord record);
  void queue_control(Pair& pair, RecordKind kind, uint64_t a, uint64_t b);
  // Writes queued records while they fit; announces a full ring otherwise.
  void push(Pair& pair);
  bool write_one(Pair& pair, OutRecord& out);

  // shm_mesh.cc: cancel, failure, liveness, waiting.
  void cancel_on_wire(const OpPtr& op, bool cleared, bool failing) override;
  void abort_locked(ErrorKind kind, const std::string& reason) override;
  void write_close(Pair& pair, CloseState state, ErrorKind kind, const std::string& text,
                   uint64_t tag = 0, uint64_t posted = 0, uint64_t sent = 0);
  // An abort notice with the cause this mesh forwards (abort_cause.h): the first it failed
  // with, else `reason`. Its origin + 1 travels in close_tag (an abort has no tag; 0: the writer).
  void write_abort(Pair& pair, ErrorKind kind, const std::string& reason);
  void fail_pair(Pair& pair, ErrorKind kind, const std::string& message);
  void fail_mesh(ErrorKind kind, const std::string& message);
  void lose_pair(Pair& pair, const std::string& message, ErrorKind kind = ErrorKind::kConnection);
  // Peers whose process has exited fail (after what they wrote is read).
  void check_liveness();
  // Waits (gloo_lite/base/wait_policy.h) for the doorbell to move from `seen`, until `bound`,
  // without the mutex.
  void sleep_on_doorbell(std::unique_lock<std::mutex>& lock, uint64_t seen, const Deadline& bound);
  void close_all();

  Address address_;
  MeshSettings settings_;
  Layout layout_;
  std::unique_ptr<SharedMemory> segment_;  // ours: peers write into it
  SegmentHeader* header_ = nullptr;
  // The job's secret (nullptr: none), read at connect: producers prove it (shm_auth.h).
  std::shared_ptr<const auth::Secret> secret_;
  std::vector<std::unique_ptr<Pair>> pairs_;
  std::deque<Pull> pulls_;
  Pull* current_pull_ = nullptr;
  std::unordered_map<uint64_t, Incoming> incoming_;
  // Polls, yields or sleeps by the host's load (connect). Each waiter adapts a copy taken under
  // the mutex and stores it back: several threads of a rank may wait at once.
  WaitPolicy wait_policy_;
  int local_sleepers_ = 0;  // threads of this rank asleep on the doorbell
  std::chrono::steady_clock::time_point next_liveness_check_{};
  bool closed_ = false;
};

}  // namespace gloo_lite::shm
