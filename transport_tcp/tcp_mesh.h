// Internal: one context's TCP connections. Matching, requests and waiting rules are the shared
// engine's (gloo_lite/transport/matching.h); this adds the sockets. The engine's one mutex per
// mesh also guards every pair's socket state; socket I/O happens under it, both from callers
// (inline sends, resumed reads, caller-driven progress in wait) and from the device's event loop.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gloo_lite/base/socket.h"
#include "gloo_lite/base/tls.h"
#include "gloo_lite/transport/abort_cause.h"
#include "gloo_lite/transport/matching.h"
#include "transport_tcp/event_loop.h"
#include "transport_tcp/wait_policy.h"
#include "transport_tcp/wire.h"

namespace gloo_lite::tcp {

using transport::ErrorKind;
using transport::Failure;
using transport::Op;
using transport::OpPtr;
using transport::Unexpected;

class TcpMesh;
class Handshake;
struct HandshakeSetup;

// Which frames a frame goes ahead of in its pair's queue (queue_frame): those of a lower lane,
// but kLast, whose current segment has not begun; never those of its own lane or above, so
// that each lane keeps its order. A clear-to-send then waits for at most one frame already
// begun (an eager message, or one segment of a payload), not for what was queued before it
// (docs/transport.md, Control frames and segments).
enum class Lane : uint8_t {
  kLast,     // goodbye, abort: behind everything queued before them
  kPayload,  // rendezvous payloads, in segments
  kMatched,  // eager, ready-to-send, mismatch: the matching order holds among them
  kAnswer,   // clear-to-send, send-cancelled: in no order with other frames
};

// An outgoing frame: header plus an optional payload that is either the user's buffer (no copy)
// or owned bytes (control text, or the tail of a cancelled send).
//
// A rendezvous payload (Lane::kPayload) leaves in segments of at most the mesh's
// segment_bytes_, each a data frame of its own (header re-encoded per segment, `sent` saying
// where it goes), so that frames of higher lanes can pass it between two segments.
struct OutFrame {
  uint8_t header[wire::kHeaderBytes];  // of the current segment
  const uint8_t* payload = nullptr;
  size_t payload_bytes = 0;  // the whole payload, every segment
  size_t sent = 0;           // payload bytes of the segments already written
  size_t segment = 0;        // payload bytes of the current segment
  size_t written = 0;        // of header + current segment
  Lane lane = Lane::kMatched;
  uint32_t recv_id = 0;  // kPayload: the receive the segments are for
  OpPtr op;              // completed when the frame is fully written (eager and data frames)
  std::vector<uint8_t> owned;

  size_t segment_total() const { return wire::kHeaderBytes + segment; }
  bool last_segment() const { return sent + segment == payload_bytes; }
  // Nothing of it is on the wire yet (over TLS, see also Pair::first_unbegun).
  bool untouched() const { return sent == 0 && written == 0; }
};

// The receive side of a pair: what the next bytes on the socket are for.
enum class RxState { kHeader, kPayload, kBlocked };

// Who reads and writes a pair's socket when it is ready (docs/transport.md, Progress).
//  kLoop: the device's event loop (the socket is in its epoll set with interest_).
//  kDriven: the waiting thread polls it itself (interest_ is 0).
//  kParked: nobody for now. A wait ended; the next waiter adopts the pair as it is (no
//    epoll_ctl), and the event loop takes it back within kParkGrace (2 ms) if nobody did.
enum class Owner { kLoop, kDriven, kParked };

class Pair : public EventHandler {
 public:
  Pair(TcpMesh* mesh, int peer) : mesh_(mesh), peer_(peer) {}
  void on_events(uint32_t events) override;

  TcpMesh* mesh_;
  bool abort_queued_ = false;  // the first abort's reason is the one the peer must read
  Failure abort_failure_;      // with it: what a payload cut off before the abort fails with
  int peer_;
  Fd fd_;
  std::unique_ptr<tls::Channel> tls_;  // with TLS configured, every byte goes through it
  std::string address_;                // peer's host:port, for messages
  bool leaves_host_ = false;           // the two ends' addresses differ (set at connect)
  bool open_ = false;                  // registered and healthy
  Failure failure_;                    // why it closed
  uint32_t interest_ = 0;              // epoll mask currently set
  Owner owner_ = Owner::kLoop;
  std::chrono::steady_clock::time_point parked_at_;  // when owner_ became kParked

  // Outgoing.
  std::deque<OutFrame> out_;
  // The first frame of out_ of which nothing has been written or committed: frames before it
  // must go out as they are (never passed, dropped or changed). Over TLS that includes the
  // frames whose bytes the channel encrypted but the socket has not taken yet (they are
  // offered again from the same front, tls::Channel::send).
  std::deque<OutFrame>::iterator first_unbegun();

  // Incoming: staging buffer for headers and small payloads; large payloads bypass it.
  std::vector<uint8_t> stage_;
  size_t stage_begin_ = 0;
  size_t stage_end_ = 0;
  RxState rx_state_ = RxState::kHeader;
  wire::FrameHeader rx_header_;
  uint8_t* rx_target_ = nullptr;  // where payload goes; nullptr discards
  size_t rx_left_ = 0;
  OpPtr rx_op_;                                // receive being filled (direct)
  std::unique_ptr<Unexpected> rx_unexpected_;  // unexpected message being buffered
  std::vector<uint8_t> rx_text_;               // abort reason being read
  // The frame just read was a payload segment with more to come: the next bytes are most
  // likely its successor's header, which is read alone so that the payload after it goes
  // straight to its destination rather than through the staging buffer (a 64 KiB copy per
  // segment otherwise).
  bool segment_follows_ = false;
  bool reading_ = false;     // inside read_pair (a write may not re-enter it)
  std::string write_error_;  // a failed write, reported once reads are done
};

class TcpMesh : public transport::MatchingMesh {
 public:
  TcpMesh(EventLoop* loop, const SocketAddress& bind, int rank, int size,
          const transport::MeshOptions& options);
  ~TcpMesh() override;

  // host:port of the listening socket; connect() is in tcp_connect.cc.
  std::string address() const override { return listen_address_.to_string(); }
  void connect(const std::vector<std::string>& addresses, uint64_t context_id,
               const Deadline& deadline) override;
  // Free: sockets read and write user memory as it is.
  bool registers_by_pointer() const override { return true; }
  std::unique_ptr<transport::Memory> register_memory(void* data, size_t bytes,
                                                     transport::MemoryKind kind) override;
  // The waiting thread reads its pairs' sockets itself (drive()), sleeping in poll().
  bool wait_until(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
                  const Deadline& until) override;
  // An abort frame with the reason on every pair, then the pairs close.
  void abort(const std::string& reason) override;
  std::string describe_peer(int peer) const override;  // "rank 3 (10.0.0.2:41000)"

  // --- used by Pair, with mutex_ held ---
  // Reads and dispatches what the socket holds. Stops after a short read (the socket is then
  // most likely empty; whoever watches it, loop or waiter, is level-triggered) unless `drain`.
  void read_pair(Pair& pair, bool drain = false);
  void read_frames(Pair& pair, bool drain);  // read_pair's loop
  // Dispatches the frames and payload bytes staged (until blocked, or a partial header).
  void consume_staged(Pair& pair);
  // One recv, straight into a large payload's destination or into the staging buffer;
  // *short_read: it did not fill what it asked for. Returns recv's result (errno as it left it).
  ssize_t receive(Pair& pair, bool* short_read);
  void write_pair(Pair& pair);
  // The socket calls of a pair, through its TLS channel when it has one (::recv and
  // ::sendmsg's conventions), and the text of the last error.
  static ssize_t pair_recv(Pair& pair, void* data, size_t bytes);
  static ssize_t pair_send(Pair& pair, iovec* iov, int count);
  static std::string pair_error(const Pair& pair);

 private:
  // Liveness, for the engine's matching: a closed pair keeps why it closed.
  bool peer_open(int peer) const override { return pairs_[peer] && pairs_[peer]->open_; }
  bool peer_on_other_host(int peer) const override {
    return pairs_[peer] && pairs_[peer]->leaves_host_;
  }
  const Failure& peer_failure(int peer) const override { return pairs_[peer]->failure_; }

  // tcp_connect.cc, connect()'s steps: dial every lower rank, then poll the listener and the
  // handshakes until every served peer has a connection.
  struct Dialling;
  void prepare_handshakes(HandshakeSetup& setup, uint64_t context_id, int pairs) const;
  void dial_lower_ranks(Dialling& dialling, const std::vector<std::string>& addresses,
                        const Deadline& deadline);
  // One poll of the listener and the handshakes; false: the deadline passed.
  bool poll_handshakes(Dialling& dialling, const Deadline& deadline);
  void advance_handshake(Dialling& dialling, Handshake& handshake, const Deadline& deadline);
  [[noreturn]] void fail_to_connect(const Dialling& dialling) const;  // names the late ranks
  void open_pairs();  // hands the connected pairs to the event loop

  // tcp_protocol.cc: frames in and out. The engine's send_* hooks each queue one frame and
  // write it at once from the calling thread when the socket is idle.
  void send_eager(const OpPtr& op) override;
  void send_ready_to_send(const Op& op) override;
  void send_clear_to_send(int peer, const OpPtr& op, uint64_t send_id) override;
  void send_mismatch_and_close(int peer, const Op& op, uint64_t sent,
                               const std::string& text) override;
  // A frame's header is in: acts on it by its type, and sets up the read of its payload.
  void on_frame_header(Pair& pair);
  void on_eager_header(Pair& pair);
  void on_clear_to_send(Pair& pair);  // the payload leaves, or the answer for a lost send
  void on_data_header(Pair& pair);    // one segment of a rendezvous payload
  // Reads `length` payload bytes to rx_target_ next (done at once when there are none).
  void expect_payload(Pair& pair, uint64_t length);
  void on_payload_done(Pair& pair);
  // Queues a frame in its lane (Lane); writes at once when the queue was empty.
  void queue_frame(Pair& pair, OutFrame frame);
  void queue_abort(Pair& pair, ErrorKind kind, const transport::AbortCause& cause);
  void queue_control(Pair& pair, const wire::FrameHeader& header, Lane lane);
  // Encodes the header of a payload's next segment (tcp_pair.cc).
  void begin_segment(OutFrame& frame) const;
  // A payload finished a segment: it goes behind the frames of higher lanes queued behind it
  // meanwhile, or, once an abort is queued, stops there and its send fails (tcp_pair.cc).
  void requeue_after_segment(Pair& pair);
  // Re-reads the pairs that stopped reading while the unexpected queue was full.
  void resume_held_messages() override;
  void update_interest(Pair& pair);

  // tcp_mesh.cc: cancel and failure.
  void cancel_on_wire(const OpPtr& op, bool cleared, bool failing) override;
  // Stops `only` (or every op when nullptr) from touching user memory through this pair.
  void detach(Pair& pair, const Op* only);
  void fail_pair(Pair& pair, ErrorKind kind, const std::string& message);
  void fail_mesh(ErrorKind kind, const std::string& message);
  // The connection to this peer is gone: fail it and, with it, the whole context.
  void lose_pair(Pair& pair, const std::string& message, ErrorKind kind = ErrorKind::kConnection);
  // lose_pair for a connection that broke here (a reset, an end of stream, a failed write),
  // after reading what the other pairs hold: a peer's abort found there is the cause.
  void lose_connection(Pair& pair, const std::string& message);
  // Writes what is queued on every open pair until it is gone or `deadline` passes; lets go of
  // `lock` while a socket is full (nullptr: the caller's lock is kept throughout).
  void flush_queued_frames(std::unique_lock<std::mutex>* lock, const Deadline& deadline);
  // The engine found this rank cannot go on (a collective mismatch): tell every peer why, with
  // the kind of error they should raise, and fail the mesh.
  void abort_locked(ErrorKind kind, const std::string& reason) override;
  // Abort, in steps: the reason queued first on every open pair, then every pair and
  // operation failed with it.
  // Returns the cause told (abort_cause.h): the first this mesh failed with, else `reason`.
  transport::AbortCause queue_abort_frames(ErrorKind kind, const std::string& reason);
  void fail_after_abort(ErrorKind kind, const transport::AbortCause& cause);
  void close_all(bool goodbye);

  EventLoop* loop_;
  // Largest payload of one data frame (GLOO_LITE_TCP_SEGMENT_BYTES): the longest a control
  // frame waits behind a rendezvous payload on this side of the socket.
  size_t segment_bytes_ = 0;
  Fd listener_;
  SocketAddress listen_address_;
  std::vector<std::unique_ptr<Pair>> pairs_;

  // Caller-driven progress: one waiting thread at a time reads its pairs' sockets itself, and
  // is woken through this eventfd when another thread completes one of its requests. When its
  // wait ends, its pairs stay parked (see Owner) so that back-to-back waits cost no epoll_ctl
  // and do not wake the event loop; a timer on the loop reclaims pairs left parked.
  bool driver_active_ = false;
  int waiters_ = 0;  // threads inside wait()
  // How the driver waits on its sockets: bounded adaptive polling, then poll() sleeping. Set
  // at the first wait, when connect() has told us which peers share this host.
  gloo_lite::WaitPolicy wait_policy_;
  bool wait_policy_set_ = false;
  // Polls `fds` without sleeping for up to the policy's budget, then sleeps in poll() until
  // `deadline`; adapts the budget to how it went. Called without the mutex.
  int poll_driven(std::vector<pollfd>& fds, const Deadline& deadline);
  std::thread::id driver_thread_;
  Fd driver_wake_;
  // Wakes the thread that drives (polls) our sockets when another thread completed one of
  // its requests; the engine calls it after every completion.
  void wake_polling_waiter() override;
  bool drive(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
             std::unique_lock<std::mutex>& lock, std::vector<Pair*>& driven);
  // drive()'s two steps: taking the pairs the requests need (and the parked ones) from the
  // loop, then each round, one poll of them and what it found read or written.
  bool start_driving(const std::vector<transport::RequestPtr>& requests,
                     std::vector<Pair*>& driven);
  void drive_once(const Deadline& deadline, std::unique_lock<std::mutex>& lock,
                  const std::vector<Pair*>& driven);
  void stop_driving(std::vector<Pair*>& driven);
  // Gives a parked pair back to the event loop now.
  void unpark(Pair& pair);
  // Request::test() without a waiter: parked pairs go back to the loop, which serves them.
  void make_progress() override;
  // On the loop thread, when reclaim_timer_ fires: parked pairs past their grace go back to
  // the loop; the timer is re-armed for the rest.
  void reclaim_parked();
  void arm_reclaim(std::chrono::nanoseconds after);
  class Reclaimer : public EventHandler {
   public:
    explicit Reclaimer(TcpMesh* mesh) : mesh_(mesh) {}
    void on_events(uint32_t /*events*/) override { mesh_->reclaim_parked(); }

   private:
    TcpMesh* mesh_;
  };
  Reclaimer reclaimer_{this};
  Fd reclaim_timer_;  // timerfd in the event loop's epoll set
  bool reclaim_armed_ = false;
  std::chrono::steady_clock::time_point reclaim_armed_at_;  // fires kParkGrace after this

  bool closed_ = false;
  bool reading_for_cause_ = false;  // lose_connection is reading the other pairs (no re-entry)
  // The cause this mesh tells its peers when it aborts or closes failed (abort_cause.h).
  transport::AbortCause cause_to_forward() const {
    return first_cause_.forward(rank_, mesh_failure(), mesh_failure().message);
  }
};

}  // namespace gloo_lite::tcp
