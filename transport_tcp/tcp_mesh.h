// Internal: one context's TCP connections. A single mutex per mesh guards matching state and
// every pair's socket state; socket I/O happens under it, both from callers (inline sends,
// resumed reads) and from the device's event loop. Completions wake waiters through one
// condition variable.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gloo_lite/base/socket.h"
#include "gloo_lite/transport/transport.h"
#include "transport_tcp/event_loop.h"
#include "transport_tcp/wire.h"

namespace gloo_lite::tcp {

class TcpMesh;

enum class ErrorKind { kNone, kTimeout, kConnection, kMismatch, kInvalid };
[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);

// A send or receive in flight.
class Op : public transport::Request {
 public:
  enum class Kind { kSend, kRecv };
  enum class Status { kPending, kDone, kFailed, kCancelled };

  Op(TcpMesh* mesh, Kind kind, uint64_t tag, uint8_t* data, size_t bytes)
      : mesh_(mesh), kind_(kind), tag_(tag), data_(data), bytes_(bytes) {}
  bool test() override;
  int source() const override { return source_; }

  TcpMesh* mesh_;
  Kind kind_;
  uint64_t tag_;
  uint8_t* data_;
  size_t bytes_;
  std::vector<int> peers_;  // send: {dest}; recv: the ranks it may match
  int source_ = -1;
  uint64_t id_ = 0;  // send id (awaiting CTS) or recv id (awaiting DATA)
  Status status_ = Status::kPending;
  ErrorKind error_kind_ = ErrorKind::kNone;
  std::string error_;
};
using OpPtr = std::shared_ptr<Op>;

// An outgoing frame: header plus an optional payload that is either the user's buffer (no copy)
// or owned bytes (control text, or the tail of a cancelled send).
struct OutFrame {
  uint8_t header[wire::kHeaderBytes];
  const uint8_t* payload = nullptr;
  size_t payload_bytes = 0;
  size_t written = 0;  // of header + payload
  OpPtr op;            // completed when the frame is fully written (eager and data frames)
  std::vector<uint8_t> owned;
};

// A message that arrived before its receive was posted.
struct Unexpected {
  int peer;
  bool rendezvous;  // true: ready-to-send announcement, no payload yet
  uint64_t length;
  uint64_t send_id;
  std::vector<uint8_t> payload;
};

// The receive side of a pair: what the next bytes on the socket are for.
enum class RxState { kHeader, kPayload, kBlocked };

class Pair : public EventHandler {
 public:
  Pair(TcpMesh* mesh, int peer) : mesh_(mesh), peer_(peer) {}
  void on_events(uint32_t events) override;

  TcpMesh* mesh_;
  int peer_;
  Fd fd_;
  std::string address_;  // peer's host:port, for messages
  bool open_ = false;    // registered and healthy
  ErrorKind error_kind_ = ErrorKind::kNone;
  std::string error_;
  uint32_t interest_ = 0;  // epoll mask currently set
  bool driven_ = false;    // a waiting caller reads this socket itself (not the event loop)

  // Outgoing.
  std::deque<OutFrame> out_;

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
};

class TcpMesh : public transport::Mesh {
 public:
  TcpMesh(EventLoop* loop, const SocketAddress& bind, int rank, int size,
          const transport::MeshOptions& options);
  ~TcpMesh() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string address() const override { return listen_address_.to_string(); }
  void connect(const std::vector<std::string>& addresses, uint64_t context_id,
               const Deadline& deadline) override;
  std::unique_ptr<transport::Memory> register_memory(void* data, size_t bytes,
                                                     transport::MemoryKind kind) override;
  transport::RequestPtr send(int peer, uint64_t tag, const transport::Memory& memory, size_t offset,
                             size_t bytes) override;
  transport::RequestPtr recv(const std::vector<int>& peers, uint64_t tag, transport::Memory& memory,
                             size_t offset, size_t bytes) override;
  void wait(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline) override;
  void cancel(const transport::RequestPtr& request) override;
  void abort(const std::string& reason) override;
  std::string describe_peer(int peer) const override;

  // --- used by Pair and Op, with mutex_ held ---
  std::mutex mutex_;
  std::condition_variable completed_;
  void read_pair(Pair& pair);
  void write_pair(Pair& pair);
  void on_frame_header(Pair& pair);
  void on_payload_done(Pair& pair);
  void complete(const OpPtr& op);
  void fail_op(const OpPtr& op, ErrorKind kind, const std::string& message);
  void fail_pair(Pair& pair, ErrorKind kind, const std::string& message);
  void fail_mesh(ErrorKind kind, const std::string& message);
  // The connection to this peer is gone: fail it and, with it, the whole context.
  void lose_pair(Pair& pair, const std::string& message);
  // Stops `only` (or every op when nullptr) from touching user memory through this pair.
  void detach(Pair& pair, const Op* only);
  void update_interest(Pair& pair);

 private:
  OpPtr match_posted(int peer, uint64_t tag);
  void deliver_unexpected(const OpPtr& op, Unexpected& message);
  void reject_size(Pair& pair, const OpPtr& op, uint64_t sent);
  void clear_to_send(Pair& pair, const OpPtr& op, uint64_t send_id);
  void queue_frame(Pair& pair, OutFrame frame);
  void queue_abort(Pair& pair, const std::string& reason);
  void queue_control(Pair& pair, wire::FrameType type, uint64_t a, uint64_t b, uint64_t c);
  void resume_blocked_pairs();
  bool cancel_locked(const OpPtr& op);
  void close_all(bool goodbye);
  std::string describe_op(const Op& op) const;
  void check_peer(const char* what, int peer) const;

  EventLoop* loop_;
  int rank_;
  int size_;
  size_t eager_bytes_;
  size_t unexpected_limit_;
  Fd listener_;
  SocketAddress listen_address_;
  std::vector<std::unique_ptr<Pair>> pairs_;

  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::list<OpPtr>> posted_;  // by tag, in posting order
  std::unordered_map<uint64_t, std::deque<std::unique_ptr<Unexpected>>> unexpected_;  // by tag
  size_t unexpected_bytes_ = 0;
  std::unordered_map<uint64_t, OpPtr> awaiting_cts_;   // sends, by send id
  std::unordered_map<uint64_t, OpPtr> awaiting_data_;  // receives, by recv id
  // Caller-driven progress: one waiting thread at a time reads its pairs' sockets itself, and
  // is woken through this eventfd when another thread completes one of its requests.
  bool driver_active_ = false;
  int64_t spin_us_ = 0;
  std::thread::id driver_thread_;
  Fd driver_wake_;
  bool drive(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
             std::unique_lock<std::mutex>& lock, std::vector<Pair*>& driven);
  void stop_driving(std::vector<Pair*>& driven);
  void wake_driver();

  ErrorKind mesh_error_kind_ = ErrorKind::kNone;
  std::string mesh_error_;
  bool closed_ = false;
};

}  // namespace gloo_lite::tcp
