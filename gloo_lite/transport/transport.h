// The transport contract. Algorithms see only these classes; every transport (TCP, ibverbs)
// implements them with the same semantics, described in docs/transport.md:
//  - a Device owns a progress engine and is shared by many contexts;
//  - a Mesh is one context's set of connections (one pair per peer), connected through
//    addresses that the context exchanges via the store;
//  - memory is registered once (free on TCP, ibv_reg_mr on verbs) and referenced by offset;
//  - send/recv are tagged, matched per (peer, tag) in posting order, never overtaking;
//  - a size mismatch fails both ends; a message whose call fingerprint differs from its
//    receive's fails the receive and aborts the mesh (MismatchError everywhere); a broken
//    connection fails every pending request with an error naming the peer; every wait has a
//    deadline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"
#include "gloo_lite/transport/mesh_options.h"

namespace gloo_lite::transport {

enum class MemoryKind { kHost, kCuda };
enum class ErrorKind;  // op.h: why a request or a mesh failed

// A registered region of memory. It must outlive every request that refers to it.
class Memory {
 public:
  Memory(void* data, size_t bytes, MemoryKind kind) : data_(data), bytes_(bytes), kind_(kind) {}
  virtual ~Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  uint8_t* data() const { return static_cast<uint8_t*>(data_); }
  size_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  void* data_;
  size_t bytes_;
  MemoryKind kind_;
};

// An operation in flight. Completion is observed through Mesh::wait or test().
class Request {
 public:
  virtual ~Request() = default;
  // True once complete; throws the operation's error if it failed.
  virtual bool test() = 0;
  // The rank a receive matched (useful for receive-from-any); -1 until known.
  virtual int source() const = 0;
};
using RequestPtr = std::shared_ptr<Request>;

// A call fingerprint: 64 bits that identify the collective call a message belongs to (collective,
// type, op, root, algorithm, a hash of the counts), made by the layer that issues the calls.
// It travels with every message at no extra round trip. A tag is one call: a receive and a
// message of its tag (the one it matches, or one from another peer that waits while the
// receive is posted) whose fingerprints differ fail the receive with MismatchError naming both
// calls, and the whole mesh is aborted with that cause, since neither rank can know what the
// other will send next. 0 means unchecked (point-to-point traffic): it matches anything.
constexpr uint64_t kUnchecked = 0;

// How the layer that makes fingerprints prints them, for the error of a mismatch. Registered
// once (the collectives do it); without it fingerprints print as hex numbers.
struct CallDescriber {
  // "allreduce #12 (float32, sum, algorithm ring, counts #3a9f01)": `fingerprint` under `tag`.
  std::string (*describe)(uint64_t fingerprint, uint64_t tag);
  // "the collective and the root": what two different fingerprints disagree on.
  std::string (*difference)(uint64_t mine, uint64_t theirs);
};
void set_call_describer(const CallDescriber& describer);

// Why a rank gave a context up (gloo_lite/transport/abort_cause.h has how it travels).
struct AbortCause {
  int origin = -1;   // the rank where the failure began; -1: none
  std::string text;  // that rank's own account of it
  bool known() const { return origin >= 0; }
};

// One context's connections to all its peers.
class Mesh {
 public:
  virtual ~Mesh() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // This rank's opaque address, to publish through the store before connect().
  virtual std::string address() const = 0;
  // Connects to every peer (addresses indexed by rank; the own entry is ignored). Peers that
  // present a different context id, protocol or rank are rejected and logged; the connect
  // completes once every genuine peer is connected, or throws at the deadline naming the ranks
  // that never arrived. An empty address means that this mesh does not serve that peer (a
  // context whose pairs use different transports gives each mesh only its own peers): no
  // connection is made to it, and a send or receive naming it fails with InvalidArgument.
  virtual void connect(const std::vector<std::string>& addresses, uint64_t context_id,
                       const Deadline& deadline) = 0;

  virtual std::unique_ptr<Memory> register_memory(void* data, size_t bytes,
                                                  MemoryKind kind = MemoryKind::kHost) = 0;
  // Whether register_memory takes `kind` for every peer of this mesh, so that a caller may hand
  // such memory to send/recv instead of staging it through host memory (the CUDA collectives'
  // GPUDirect path, cuda/gpudirect.h). Host memory always; device memory only where the
  // transport reaches it directly (ibverbs with the peer-memory module).
  virtual bool can_register(MemoryKind kind) const { return kind == MemoryKind::kHost; }
  // Whether a plain Memory{data, bytes, kHost} that the caller made serves as this mesh's
  // registration of that host memory (TCP, shared memory: a registration is the pointer and
  // length), so that a caller registering buffers per call may skip register_memory's heap
  // allocation. False where registering pins memory (ibverbs) or wraps one registration per
  // transport (a mixed mesh with several).
  virtual bool registers_by_pointer() const { return false; }

  // Sends `bytes` from `memory` at `offset` to `peer` under `tag`, as part of the call
  // `fingerprint` (kUnchecked: none).
  virtual RequestPtr send(int peer, uint64_t tag, const Memory& memory, size_t offset, size_t bytes,
                          uint64_t fingerprint) = 0;
  // Receives exactly `bytes` into `memory` at `offset` from any one of `peers` under `tag`, as
  // part of the call `fingerprint` (kUnchecked: accepts a message of any call).
  virtual RequestPtr recv(const std::vector<int>& peers, uint64_t tag, Memory& memory,
                          size_t offset, size_t bytes, uint64_t fingerprint) = 0;
  // Point-to-point forms: unchecked.
  RequestPtr send(int peer, uint64_t tag, const Memory& memory, size_t offset, size_t bytes) {
    return send(peer, tag, memory, offset, bytes, kUnchecked);
  }
  RequestPtr recv(const std::vector<int>& peers, uint64_t tag, Memory& memory, size_t offset,
                  size_t bytes) {
    return recv(peers, tag, memory, offset, bytes, kUnchecked);
  }
  RequestPtr recv(int peer, uint64_t tag, Memory& memory, size_t offset, size_t bytes,
                  uint64_t fingerprint = kUnchecked) {
    return recv(std::vector<int>{peer}, tag, memory, offset, bytes, fingerprint);
  }

  // Waits for all requests. Throws the first failure; on the deadline, cancels the requests
  // that are still pending (their buffers are no longer touched) and throws TimeoutError naming
  // the peers that did not complete.
  void wait(const std::vector<RequestPtr>& requests, const Deadline& deadline) {
    wait_until(requests, deadline, deadline);
  }
  // A bounded look: waits like wait() but, when `until` (earlier than the deadline) passes
  // first, returns false and cancels nothing; the requests go on (an interruptible wait in
  // slices, Work::wait with a timeout). True once all of them completed.
  virtual bool wait_until(const std::vector<RequestPtr>& requests, const Deadline& deadline,
                          const Deadline& until) = 0;
  // Cancels a pending request: afterwards its memory is no longer read or written.
  virtual void cancel(const RequestPtr& request) = 0;
  // cancel() for a request of a call that is failing (an exception unwinds it): this rank's
  // context fails next, and its abort is what the peer must hear. A peer that has already
  // cleared such a send gets no "send cancelled" (which reads as a timeout and would reach it
  // before the abort's cause); it waits for the abort, within its deadline.
  virtual void cancel_failing(const RequestPtr& request) { cancel(request); }

  // Tells every peer (best effort) that this rank is failing with `reason`, then closes the
  // connections; peers fail their pending requests promptly with that reason.
  virtual void abort(const std::string& reason) = 0;
  // Why this mesh failed, as the cause travels from rank to rank (abort_cause.h): the rank
  // where it began and that rank's own words; unknown while the mesh works (and for a mesh
  // that cannot tell). A context hands it on to peers the mesh does not reach (the waiters of
  // a host segment), so that they read the first rank's cause, not a relay's message about it.
  virtual AbortCause failure_cause() { return {}; }
  // abort() for a cause that began at another rank and reached this one outside the mesh (a
  // host segment's abort record): peers raise it as `cause.origin`'s, in its own words.
  virtual void abort_relayed(const AbortCause& cause) { abort(cause.text); }
  // abort() and abort_relayed() for a failure of `kind` (kMismatch: a collective mismatch
  // found outside the mesh, in a host segment): the peers raise that kind of error, so that a
  // mismatch is a MismatchError on every host. A mesh that cannot carry a kind aborts plainly.
  virtual void abort_with(ErrorKind kind, const std::string& reason) {
    (void)kind;
    abort(reason);
  }
  virtual void relay_abort(ErrorKind kind, const AbortCause& cause) {
    (void)kind;
    abort_relayed(cause);
  }

  // A collective call under `tag` (its fingerprint) begins that may post nothing on this mesh
  // (it runs in a host segment): the mesh notes it as a post under that tag would, so that a
  // message waiting for a call this rank has passed, or of another call under this number,
  // fails the context now (matching_calls.h) instead of at close; a transport that reads its
  // messages only while a thread drives it takes in what arrived first. Once per call, on the
  // fast path of the smallest calls: no syscall. Throws MismatchError when such a message
  // (found now or before, and not raised yet) failed the mesh.
  virtual void enter_collective(uint64_t tag, uint64_t fingerprint) {
    (void)tag;
    (void)fingerprint;
  }

  // "rank 3 (10.0.0.2:41000)", for error messages.
  virtual std::string describe_peer(int peer) const = 0;
  // The name of the transport that serves `peer` ("shm", "tcp"), "" when none does or the
  // mesh cannot tell. Collectives use it to find the peers that share this host (shm).
  virtual std::string transport_of(int peer) const {
    (void)peer;
    return "";
  }
};

// One NIC/configuration with its progress engine; shared by every context that uses it.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<Mesh> create_mesh(int rank, int size, const MeshOptions& options) = 0;
  // Whether a mesh of this device can connect to the peer whose mesh (of the same transport)
  // published `peer_address`: the per-pair test of the transport table, evaluated by both ends
  // on the same two addresses (NCCL's canConnect). Shared memory: the same host and /dev/shm;
  // a network transport: true.
  virtual bool can_connect(const std::string& my_address, const std::string& peer_address) const {
    (void)my_address;
    (void)peer_address;
    return true;
  }
};

}  // namespace gloo_lite::transport
