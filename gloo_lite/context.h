// A Context is one communicator: this process's rank among `size` ranks, connected to every
// peer through a transport mesh. Collectives (gloo_lite/collectives.h) and point-to-point calls
// run on a context.
//
// The public handle: it owns (shared) an engine, which holds the mesh, the streams, the host
// segments and the failure handling (gloo_lite/context_engine.h, internal: not installed, and
// nothing above core includes it). So this header names neither the transport contract, nor
// stores, nor the flight recorder: an embedder's build sees only what it calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/transport/mesh_options.h"
#include "gloo_lite/work.h"

namespace gloo_lite {

class Store;  // rendezvous/store.h
class ContextEngine;

namespace transport {
class Device;  // gloo_lite/transport/transport.h
}

struct ContextOptions {
  // Deadline for connecting and default for every operation; 0 means GLOO_LITE_TIMEOUT_MS.
  std::chrono::milliseconds timeout{0};
  transport::MeshOptions mesh;
  // When this context fails, publish a failure report (gloo_lite/failure_report.h) in the store
  // for the launcher to read. init_from_env sets it: its ranks are the launcher's ranks.
  bool report_failures = false;
  // Seconds per byte over a host's link to the others, where the creator knows it (a split
  // passes its parent's, agreed by the same ranks): the network probe is then skipped. 0:
  // measured at creation when the context spans several hosts (gloo_lite/network_probe.h).
  double network_beta = 0;
};

class Context : public std::enable_shared_from_this<Context> {
 public:
  // Connects the full mesh: each rank publishes its address (1 store set), reads the addresses
  // it needs (P-1 gets), and connects, all before the timeout. The store should be scoped to
  // this job (a fresh prefix). Contexts may be created again and again on one store, while
  // others live or after they failed: each context meets under "gloo_lite/ctx/<k>/", k from
  // per-rank counters of contexts in the store (a rank that missed a creation catches up with
  // the others), so keys of earlier contexts never confuse a later one. Every rank must
  // therefore create its contexts on a store in the same order.
  static std::shared_ptr<Context> create(std::shared_ptr<Store> store, int rank, int size,
                                         std::shared_ptr<transport::Device> device,
                                         ContextOptions options = {});
  // Work still in flight (non-blocking calls, queued or running) is cancelled: the context
  // fails with that reason (so peers learn it), every such Work finishes with an error, and the
  // destructor returns once none of it touches the context any more.
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The default timeout of every call (ContextOptions::timeout, else GLOO_LITE_TIMEOUT_MS).
  std::chrono::milliseconds timeout() const;

  // Splits into sub-contexts like MPI_Comm_split: ranks with equal `color` form one context,
  // ordered by (key, old rank). A negative color returns nullptr (the rank joins none).
  // A collective on tag 0 (an allgather of (color, key)), with the same rules as every other
  // collective: called in the same order on every rank, one at a time per context (a split
  // racing another split or tag-0 collective from a second thread fails the context with
  // InvalidArgument instead of silently mixing up the calls).
  std::shared_ptr<Context> split(int color, int key);

  // Whether this process is a fork() child of the one that created this context: the child
  // shares the parent's sockets and segments but has none of its threads, so every call
  // throws there (require_creating_process), and destroying the context there releases
  // nothing: no goodbye, shutdown, abort, unlink or write into a segment may reach the
  // parent's peers. The child's copies of the descriptors and mappings go when it exits.
  bool forked() const;
  // Throws InvalidArgument naming `what` in a forked child: for an embedder's own entry points
  // that hold a context (the Python module's work handles).
  void require_creating_process(const char* what) const;

  // A random id rank 0 picked for this context (it travels in every handshake).
  uint64_t id() const;
  // "context 3f2a9c01d2e4b5a6 (rank 1 of 4)", for messages.
  std::string describe() const;

  // Point-to-point on host buffers with this context's timeout (or `timeout` when non-zero).
  void send(int peer, const void* data, size_t bytes, uint64_t tag,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  void recv(int peer, void* data, size_t bytes, uint64_t tag,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Receives from whichever of `peers` sends first; returns that rank.
  int recv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Non-blocking forms: they post the transfer and return; the transport moves the bytes
  // while the caller goes on (gloo_lite/work.h). Point-to-point tags are a space of their own
  // (0 <= tag < 2^63), disjoint from the collectives'.
  Work isend(int peer, const void* data, size_t bytes, uint64_t tag,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  Work irecv(int peer, void* data, size_t bytes, uint64_t tag,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  Work irecv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  // Ends every call in flight on this context now, whichever thread runs or waits for it: the
  // context fails with "<context> was closed by this rank with 1 operation(s) in flight
  // (allreduce #0 on tag 1)" (abort(): the peers learn it, naming this rank), each such call
  // raises it, and no new stream starts. Returns once none of them runs any more. For the
  // bindings' close, while other threads' calls may still hold the context; the destructor
  // does the same. Idempotent; in a forked child it does nothing (the calls are the parent's).
  void close();
  // Fails this context with `reason` (a local cause): work in flight ends with it, every peer
  // raises with it naming this rank, and later calls fail at once; the mesh is aborted even
  // when the context had failed before (a failure relayed from a peer leaves it up).
  void abort(const std::string& reason);
  // Fails this context with `reason` (a local cause) unless it failed before: the first
  // failure logs one warning with the flight record, publishes a failure report when
  // ContextOptions::report_failures is set, and aborts the mesh, so that every peer raises with
  // this reason, naming this rank. Later calls change nothing.
  void fail(const std::string& reason);
  // Why the context failed, empty while it works.
  std::string failure() const;
  // The recent collectives of this context (the flight recorder), as one readable block, on
  // demand. Also logged once when the context fails.
  std::string flight_record() const;

 private:
  explicit Context(std::shared_ptr<ContextEngine> engine);
  friend ContextEngine& engine_of(const Context& context);  // gloo_lite/context_engine.h

  std::shared_ptr<ContextEngine> engine_;
  int rank_;
  int size_;
};

}  // namespace gloo_lite
