// Internal to the transports: the state of one send or receive, shared by every transport's
// mesh (see matching.h, which owns and advances it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::transport {

class MatchingMesh;

// Which exception a failure becomes when it reaches the caller.
enum class ErrorKind { kNone, kTimeout, kConnection, kMismatch, kInvalid };

// Why an operation, a peer or a whole mesh can no longer succeed; kNone: it still can.
struct Failure {
  ErrorKind kind = ErrorKind::kNone;
  std::string message;
  bool failed() const { return kind != ErrorKind::kNone; }
};

[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);

// A send or receive in flight. Its fields belong to the mesh and change only under its mutex.
class Op : public Request {
 public:
  enum class Kind { kSend, kRecv };
  enum class Status { kPending, kDone, kFailed, kCancelled };

  Op(MatchingMesh* mesh, Kind kind, uint64_t tag, const Memory& memory, size_t offset, size_t bytes,
     uint64_t fingerprint)
      : mesh_(mesh),
        kind_(kind),
        tag_(tag),
        fingerprint_(fingerprint),
        memory_(&memory),
        data_(memory.data() + offset),
        bytes_(bytes) {}
  bool test() override;
  int source() const override { return source_; }

  MatchingMesh* mesh_;
  Kind kind_;
  uint64_t tag_;
  uint64_t fingerprint_;  // the call it belongs to (transport.h); kUnchecked: none
  const Memory* memory_;  // the registered region: verbs needs its keys for a rendezvous
  uint8_t* data_;
  size_t bytes_;
  std::vector<int> peers_;  // send: {dest}; recv: the ranks it may match
  int source_ = -1;
  // Rendezvous: a send's id while it waits for clear-to-send (and, on verbs, while its RDMA
  // write runs); a receive's id once it has given clear-to-send. 0: none.
  uint64_t id_ = 0;
  Status status_ = Status::kPending;
  Failure failure_;
};
using OpPtr = std::shared_ptr<Op>;

// A message that arrived before its receive was posted: an eager payload, or the announcement
// of a rendezvous (32 bytes of bookkeeping, no payload).
struct Unexpected {
  int peer;
  bool rendezvous;
  uint64_t length;
  uint64_t send_id;      // rendezvous: the sender's id, echoed in clear-to-send
  uint64_t fingerprint;  // the sender's call
  std::vector<uint8_t> payload;
};

}  // namespace gloo_lite::transport
