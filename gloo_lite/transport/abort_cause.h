// Internal to the transports: why a rank gave a context up, as it travels from rank to rank.
// A rank whose context failed because a peer aborted forwards that peer's cause, origin and
// text as they came, when it tells its other peers (at once, or when it closes failed); it never
// wraps it in a message of its own. So whatever path a cause takes, every rank reads the first
// rank's own words once, the rank they came from, and who relayed them, never a cascade of
// "rank 0 aborted: rank 1 aborted: ...". The TCP abort frame carries the origin in a field of
// its own (docs/wire-format.md), the shared-memory close notice and the shm-collectives abort
// record likewise.
#pragma once

#include <string>
#include <utility>

#include "gloo_lite/base/error.h"
#include "gloo_lite/transport/op.h"

namespace gloo_lite::transport {

// AbortCause itself is part of the contract (transport.h: Mesh::failure_cause).

// What a rank raises when `cause` reached it from `sender`; `name(r)` describes rank r
// ("rank 1 (10.0.0.2:41000)"):
//   rank 1 (10.0.0.2:41000) aborted: <text>                            sender is the origin
//   rank 1 (10.0.0.2:41000) aborted: <text> (relayed by rank 0 (...))  sender forwarded it
template <typename Name>
std::string describe_abort(const AbortCause& cause, int sender, const Name& name) {
  std::string out = name(cause.origin) + " aborted: " + cause.text;
  if (cause.origin != sender) out += " (relayed by " + name(sender) + ")";
  return out;
}

// The error a rank raises for another rank's abort that reached it outside its mesh (a host
// segment's abort record): the collective layer tells the mesh's peers `cause` as it came.
// Base is the kind of error raised: ConnectionError for an abort, MismatchError for a
// collective mismatch another rank found there (its record says kMismatch), so that ranks on
// other hosts raise a MismatchError too, in the origin's words.
template <typename Base>
class Relayed : public Base {
 public:
  Relayed(const std::string& what, AbortCause cause) : Base(what), cause_(std::move(cause)) {}
  const AbortCause& cause() const { return cause_; }

 private:
  AbortCause cause_;
};
using RelayedAbort = Relayed<ConnectionError>;
using RelayedMismatch = Relayed<MismatchError>;

// The origin a peer's abort names, from the wire's "origin + 1, 0: the sender itself"; a rank
// outside the context reads as the sender (a peer cannot be believed about ranks that do not
// exist, and the text is still its own).
int decode_origin(uint64_t origin_plus_one, int sender, int size);

// The cause a mesh tells its peers: the first one it failed with. One per mesh, under its mutex.
class FirstCause {
 public:
  // A cause this mesh is failing with now: a peer's abort that arrived, or this rank's own
  // (a local abort). Kept only while the mesh has not failed yet (`mesh_failure`): a later
  // cause is a consequence of the first.
  void note(const AbortCause& cause, const Failure& mesh_failure) {
    if (!mesh_failure.failed() && !first_.known()) first_ = cause;
  }
  // What to tell a peer: the cause noted, else this rank's own account of why its mesh failed
  // (a lost connection, a protocol error), else `reason`, the failure beginning here now.
  AbortCause forward(int rank, const Failure& mesh_failure, const std::string& reason) const {
    if (first_.known()) return first_;
    return {rank, mesh_failure.failed() ? mesh_failure.message : reason};
  }

 private:
  AbortCause first_;
};

}  // namespace gloo_lite::transport
