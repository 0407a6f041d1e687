// Internal: the mesh of a mixed device (mixed_device.h). One sub-mesh per transport; after
// connect() each peer belongs to exactly one of them, and the sub-meshes that serve nobody are
// gone.
//
// Choice per pair. For peers a < b, the transport is the first one in a's address list (its
// priority order) that b's list offers too and whose can_connect(a's, b's) holds. Both ends
// see the same two lists, so both pick the same transport. With a forced transport every rank
// also checks every other pair with the same rule, so that a pair it cannot serve
// (GLOO_LITE_TRANSPORT=shm across hosts) fails connect() on every rank at once, naming the
// ranks, instead of leaving the others to time out.
//
// A sub-mesh may also give a pair back at connect (both ends agree: shared memory that cannot
// be reserved for that pair's inbox); the pair then takes the next transport after it in the
// same way, connected later in table order on both ends.
//
// A transport whose mesh cannot be created on this rank (create_mesh throws ConnectionError: a
// shared-memory segment that cannot be created or sized) is left out of this rank's address
// list unless it was forced or is the last one: every pair with this rank then chooses the
// next, on both ends alike, and this rank warns once, naming the peers and the cause.
//
// One transport for every peer (the usual case: one host, or GLOO_LITE_TRANSPORT): the mesh
// delegates everything to that sub-mesh, requests and memory included, at the cost of one
// branch per call.
//
// Several: memory is registered with every sub-mesh (MixedMemory), requests are wrapped with
// the sub-mesh they belong to (so no table of requests outlives them), and send, recv,
// cancel and describe_peer go by peer. A receive from any of several peers served by
// different transports is refused with InvalidArgument: posting it on both sub-meshes could
// let each match a message, and a message must never be taken by two receives.
//
// The wait rule (wait_until over requests of several sub-meshes). TCP and ibverbs make
// progress with nobody waiting (event loop, progress thread); shared memory only while a
// thread waits on or tests one of its requests. So:
//  1. The requests are grouped by sub-mesh; groups of transports that need a waiter come first
//     (table order). The thread sleeps in the first unfinished group's own wait_until, for at
//     most a slice; the other groups are looked at without sleeping (an `until` that has
//     passed), which also raises their failures at once.
//  2. Every waiter-driven sub-mesh moves whenever a thread waits on or tests any request of
//     this mesh: before each slice (and in each Request::test), every waiter-driven sub-mesh
//     but the one slept in makes one round of progress without sleeping (an empty wait whose
//     `until` has passed), whether or not this wait, or this rank, holds requests of it. So a
//     peer over shared memory is never left waiting for this rank to read its inbox (a full
//     ring, a pipelined large message) or to push output, nor is its abort, call mismatch or
//     death missed, while this rank waits on TCP. The slice is short (kProgressSlice) only
//     while such a sub-mesh has work in hand (has_work_for_waiter: output queued for a full
//     ring, a large message arriving in parts, unread records it can take); otherwise long
//     (kFailureSlice): a receive posted early and not yet waited on, or a send waiting for its
//     receiver, costs about 50 wake-ups a second, not 1000.
//     It cannot deadlock: the sub-mesh slept in progresses because this thread waits in it,
//     those that progress alone need nobody, and every other one makes progress at least once
//     per kFailureSlice whatever it holds, so whatever a peer needs from this rank's
//     transport (not a receive only the caller can post) is done within a slice while any
//     thread is in this mesh; the slice length decides only how soon. Completions in the
//     sub-mesh slept in end the sleep at once; others are seen when the slice ends, and the
//     sub-mesh slept in is the first unfinished group, waiter-driven ones first (rule 1).
//  3. A failure of one sub-mesh (a lost peer, an abort, a call mismatch) reaches the others:
//     when it ends a wait or a Request::test, and after every slice, the mesh reads each
//     sub-mesh's failure and aborts the healthy ones with the same reason and kind (their
//     peers learn it too), as a TCP mesh fails every pair when one breaks.
//  4. A failure or a timeout in one group cancels the pending requests of the others before
//     it propagates (no buffer stays in use). The deadline is this loop's (the groups' own
//     waits get none), so that a timeout names the late peers of every group at once.
//  5. A lost connection is often only the consequence of an abort: the peer that closed it was
//     told by a third rank, whose abort to this rank still waits, unread, in a waiter-driven
//     sub-mesh (shared memory moves only when driven). So before a connection failure this
//     rank found itself is relayed (rule 3) or raised, every waiter-driven sub-mesh makes one
//     round of progress; a peer's abort found there is the cause relayed and raised instead.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gloo_lite/transport/matching.h"
#include "gloo_lite/transport/mixed_device.h"

namespace gloo_lite::transport {

class MixedMesh : public Mesh {
 public:
  MixedMesh(int rank, int size, std::vector<SubDevice> transports, bool forced,
            const MeshOptions& options);
  ~MixedMesh() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string address() const override;
  void connect(const std::vector<std::string>& addresses, uint64_t context_id,
               const Deadline& deadline) override;
  std::unique_ptr<Memory> register_memory(void* data, size_t bytes, MemoryKind kind) override;
  bool registers_by_pointer() const override;
  // Only if every sub-mesh can: a call's memory may travel on any of them.
  bool can_register(MemoryKind kind) const override;
  RequestPtr send(int peer, uint64_t tag, const Memory& memory, size_t offset, size_t bytes,
                  uint64_t fingerprint) override;
  RequestPtr recv(const std::vector<int>& peers, uint64_t tag, Memory& memory, size_t offset,
                  size_t bytes, uint64_t fingerprint) override;
  using Mesh::recv;
  using Mesh::send;
  bool wait_until(const std::vector<RequestPtr>& requests, const Deadline& deadline,
                  const Deadline& until) override;
  void cancel(const RequestPtr& request) override;
  void cancel_failing(const RequestPtr& request) override;
  void abort(const std::string& reason) override;
  std::string describe_peer(int peer) const override;
  std::string transport_of(int peer) const override;
  AbortCause failure_cause() override;
  void abort_relayed(const AbortCause& cause) override;
  // Every sub-mesh, with the kind: a mismatch crosses from shared memory to TCP as one.
  void abort_with(ErrorKind kind, const std::string& reason) override;
  void relay_abort(ErrorKind kind, const AbortCause& cause) override;
  void enter_collective(uint64_t tag, uint64_t fingerprint) override;  // every sub-mesh

  // Carries the first sub-mesh failure to the healthy sub-meshes (rule 3 above), or a peer's
  // abort found behind it (rule 5).
  void relay_failures();
  // In a handler of a failed wait or test: relay_failures, then rethrows the exception in
  // flight, or the peer's abort behind it when it is a connection this rank lost (rule 5).
  [[noreturn]] void rethrow_cause();

 private:
  struct Sub {
    SubDevice transport;
    std::unique_ptr<Mesh> mesh;
    MatchingMesh* engine = nullptr;  // mesh, when built on the shared engine: its failure()
    std::string address;             // published before connect
  };
  class MixedRequest;
  class MixedMemory;

  void check_peer(const char* what, int peer) const;
  // The sub-mesh (index into subs_) chosen for the pair (a, b) from their address lists, -1:
  // none can serve it.
  // `after`: only transports after that one in a's list (a pair its sub-mesh gave back).
  int choose(const std::vector<LabelledAddress>& a, const std::vector<LabelledAddress>& b,
             const std::string& after = "") const;
  // connect()'s steps: the sub-mesh of each of this rank's pairs (of every pair when forced),
  // returning the pairs none serves ("" when none); the error naming them; then each sub-mesh
  // connected to the peers it serves (the ones that serve nobody dropped).
  std::string choose_pairs(const std::vector<std::vector<LabelledAddress>>& lists);
  [[noreturn]] void fail_unserved(const std::string& unserved) const;
  void connect_subs(const std::vector<std::vector<LabelledAddress>>& lists, uint64_t context_id,
                    const Deadline& deadline);
  // The pairs `sub` gave back at connect (MatchingMesh::declined) take the next transport
  // that serves them; one warning on the rank whose failure it was.
  void reroute_declined(const Sub& sub, const std::vector<std::vector<LabelledAddress>>& lists);
  int sub_index(const std::string& name) const;
  void log_choice() const;
  // One warning per transport that could not set up here, naming the peers that offered it
  // and what their pairs use instead.
  void warn_unavailable(const std::vector<std::vector<LabelledAddress>>& lists) const;
  // One round of progress, without sleeping, on every waiter-driven sub-mesh but `except`
  // (an index into subs_; -1: none) (rule 2). True when one of them has work in hand, so
  // that the next slice must be short.
  bool drive_waiter_driven(int except);
  // mixed_wait.cc, wait_until's steps.
  struct Groups;
  Groups group(const std::vector<RequestPtr>& requests) const;
  // In a handler of a failed look: cancels every group's requests (rule 4), rethrows the cause.
  [[noreturn]] void fail_wait(const Groups& groups);
  // One wait on group `index` until `slice` (no deadline of its own); whether it is done.
  bool look(Groups& groups, size_t index, const Deadline& slice);
  // At the deadline: throws one TimeoutError naming every late group's peers; true when they
  // all completed meanwhile.
  bool time_out(const Groups& groups, const Deadline& deadline);
  void hand_back(const Groups& groups, const std::vector<size_t>& others);
  // Whether `sub` failed of a connection failure this rank found itself (a lost peer, a
  // protocol error), not of a peer's abort.
  bool found_here(const Sub& sub) const;
  // The failed sub-mesh (index) whose failure is this rank's cause (rules 3 and 5); -1: none.
  int cause_sub();

  const int rank_;
  const int size_;
  const bool forced_;
  std::vector<std::unique_ptr<Sub>> subs_;
  std::vector<int> sub_of_peer_;  // by rank; -1: this rank
  Mesh* single_ = nullptr;        // the only sub-mesh, when one serves every peer
  // Transports whose mesh could not be created on this rank (name, why): not offered.
  std::vector<std::pair<std::string, std::string>> unavailable_;
};

// A request of one sub-mesh (test() in mixed_wait.cc).
class MixedMesh::MixedRequest : public Request {
 public:
  MixedRequest(MixedMesh* mesh, int sub, RequestPtr inner)
      : mesh_(mesh), sub_(sub), inner_(std::move(inner)) {}
  bool test() override;
  int source() const override { return inner_->source(); }

  MixedMesh* mesh_;
  int sub_;  // index into subs_
  RequestPtr inner_;
};

}  // namespace gloo_lite::transport
