// Internal: the engine of a Context (gloo_lite/context.h), the communicator itself: this
// process's rank among `size` ranks, connected to every peer through a transport mesh, with the
// streams, scratch, host segments, flight recorder and failure handling that the collectives,
// algorithms, failure reports and cuda/ work with. A public Context is a handle that owns its
// engine (shared); engine_of() below is the one way from the handle to it. Nothing above core
// includes this header (test/layering checks it; docs/layering.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gloo_lite/base/fork_generation.h"
#include "gloo_lite/context.h"
#include "gloo_lite/flight_recorder.h"
#include "gloo_lite/transport/transport.h"
#include "gloo_lite/work.h"
#include "rendezvous/store.h"

namespace gloo_lite {

class HostSegment;

namespace algo {
struct Call;
}

namespace detail {
class Stream;
class PointToPointHub;
}  // namespace detail

class ContextEngine {
 public:
  // Connects the full mesh: each rank publishes its address (1 store set), reads the addresses
  // it needs (P-1 gets), and connects, all before the timeout. The store should be scoped to
  // this job (a fresh prefix). Contexts may be created again and again on one store, while
  // others live or after they failed: each context meets under "gloo_lite/ctx/<k>/", k from
  // per-rank counters of contexts in the store (a rank that missed a creation catches up with
  // the others), so keys of earlier contexts never confuse a later one. Every rank must
  // therefore create its contexts on a store in the same order.
  static std::shared_ptr<ContextEngine> create(std::shared_ptr<Store> store, int rank, int size,
                                               std::shared_ptr<transport::Device> device,
                                               ContextOptions options = {});
  // Work still in flight (non-blocking calls, queued or running) is cancelled: the context
  // fails with that reason (so peers learn it), every such Work finishes with an error, and the
  // destructor returns once none of it touches the context any more.
  ~ContextEngine();

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  Deadline deadline() const { return Deadline::after(options_.timeout); }
  transport::Mesh& mesh() { return *mesh_; }
  const std::shared_ptr<Store>& store() const { return store_; }
  const std::shared_ptr<transport::Device>& device() const { return device_; }

  // Ranks of this context per usable CPU on its most crowded host (2.0 for 8 ranks on a
  // 4-core machine), the same on every rank. The tuner charges each message's CPU time against
  // it: where ranks outnumber cores, algorithms that send fewer messages win.
  double ranks_per_core() const { return ranks_per_core_; }
  // Whether every rank of this context runs on this host (same host identity, gloo_lite/base/
  // host.h), as exchanged at connect: the condition of the shared-memory collectives.
  bool on_one_host() const;
  // Whether the shared-memory collectives may run: on one host, and neither
  // GLOO_LITE_SHM_COLLECTIVES=0 nor GLOO_LITE_TRANSPORT forcing a network transport (which asks
  // for the network between every pair), as the knobs read when this context connected.
  bool shm_collectives_allowed() const { return shm_knobs_allow_ && on_one_host(); }
  // The knobs' part of it alone: what the hierarchical collectives, whose context spans hosts,
  // ask before running phases in per-host segments.
  bool shm_knobs_allow() const { return shm_knobs_allow_; }
  // The host identity of every rank, as exchanged at connect (the same on every rank); empty
  // for a single-rank context.
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Seconds per byte over one host's link to the others, as measured when this context was
  // created (or given by ContextOptions::network_beta), the same on every rank; 0 on one host
  // or where GLOO_LITE_NET_BETA_GBPS gives the figure. The tuner's cross-host beta.
  double network_beta() const { return network_beta_; }
  // The shared segment of the collectives of `call`'s stream (gloo_lite/shm/host_segment.h),
  // created at its first use, which is a collective call (every rank comes, in stream order).
  // nullptr when it cannot be created (logged once; every rank gets the same answer, so that
  // all of them fall back to the message algorithms together). The context owns it.
  // `group` names a subset of the ranks (those of `call`, whose rank and size are within the
  // group: the hierarchical collectives' per-host phases), `group_ranks` their context ranks in
  // the group's order (the segment's texts name them); "" and {} are the whole context.
  HostSegment* host_segment(const algo::Call& call, size_t chunk_bytes,
                            const std::string& group = "",
                            const std::vector<int>& group_ranks = {});
  // Context::split: the engine of this rank's sub-context (its allgather of (color, key) runs
  // on this engine), nullptr for a negative color.
  std::shared_ptr<ContextEngine> split(int color, int key);

  // Whether this process is a fork() child of the one that created this context: the child
  // shares the parent's sockets and segments but has none of its threads, so every call
  // throws there (require_creating_process), and destroying the context there releases
  // nothing: no goodbye, shutdown, abort, unlink or write into a segment may reach the
  // parent's peers. The child's copies of the descriptors and mappings go when it exits.
  bool forked() const { return fork_generation_ != fork_generation(); }
  // Throws InvalidArgument naming `what` in a forked child (one relaxed load otherwise): the
  // first check of every call.
  void require_creating_process(const char* what) const {
    if (forked()) throw_forked(what);
  }
  // Throws ConnectionError naming `what` once close() (or the destructor) ran: a transfer
  // posted then would go out on a mesh nobody drives any more (one relaxed load).
  void require_open(const char* what) const {
    if (closing_.load(std::memory_order_relaxed)) throw_closed(what);
  }

  // A random id rank 0 picked for this context (it travels in every handshake).
  uint64_t id() const { return context_id_; }
  // "context 3f2a9c01d2e4b5a6 (rank 1 of 4)", for messages.
  std::string describe() const;
  // This context's keys in the store: "gloo_lite/ctx/<k>/<name>".
  std::string store_key(const std::string& name) const;

  // The calls of Context that forward here, as documented there (gloo_lite/context.h); the
  // network probe, which runs before the handle exists, uses the point-to-point ones directly.
  // Point-to-point tags are the user's half of the tag space (gloo_lite/transport/tag_space.h).
  void send(int peer, const void* data, size_t bytes, uint64_t tag,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  void recv(int peer, void* data, size_t bytes, uint64_t tag,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  int recv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  Work isend(int peer, const void* data, size_t bytes, uint64_t tag,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  Work irecv(int peer, void* data, size_t bytes, uint64_t tag,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  Work irecv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  void close();
  // fail() with a local cause, and the mesh aborted even when the context had failed before.
  void abort(const std::string& reason);
  // A failure ends this context: the first one logs one warning with the flight recorder's
  // dump, publishes a failure report naming `culprits` when options.report_failures is set, and
  // with `tell_peers` (a local cause) aborts the mesh with `reason`, so that every peer raises
  // with this reason, naming this rank. Later calls change nothing. The report is given up at
  // `report_by` (a timed-out call's budget, collective_failure.h) or after 250 ms.
  void fail(const std::string& reason, const std::vector<int>& culprits = {},
            bool tell_peers = true, Deadline report_by = Deadline::never());
  // fail() for a failure of `kind` (kMismatch: a collective mismatch): the mesh's peers and the
  // waiters of this rank's host segments raise that kind of error, on every host.
  void fail_with(transport::ErrorKind kind, const std::string& reason, bool tell_peers);
  // Why the context failed, empty while it works.
  std::string failure() const;
  // Whether the mesh failed (and so told its peers, or will at close, the first cause); an
  // error found outside it (a host segment) must be told to them by the caller.
  bool mesh_failed() const;
  // Tells the mesh's peers another rank's cause as that rank's (Mesh::abort_relayed), raised
  // there as `kind`.
  void relay_to_peers(const transport::AbortCause& cause, transport::ErrorKind kind);

  // The recent collectives of this context (see FlightRecorder), as one readable block, on
  // demand. Also logged once when the context fails.
  std::string flight_record() const;
  FlightRecorder& flight_recorder() { return recorder_; }

  // Scratch memory of at least `bytes` for the running collective of stream `tag`: reused
  // across calls and only grown, so that steady-state collectives allocate (and first-touch)
  // nothing.
  struct ScratchSpace {
    uint8_t* data = nullptr;
    transport::Memory* memory = nullptr;
  };
  ScratchSpace scratch(uint16_t tag, size_t bytes);
  // The stream of collectives with `tag` (gloo_lite/stream.h), created on first use.
  detail::Stream& stream(uint16_t tag);

 private:
  ContextEngine(std::shared_ptr<Store> store, int rank, int size,
                std::shared_ptr<transport::Device> device, ContextOptions options);
  void connect();
  [[noreturn]] void throw_forked(const char* what) const;
  [[noreturn]] void throw_closed(const char* what) const;
  uint64_t agree_on_generation(const Deadline& deadline);
  // Raises this rank's count `mine` to the highest of its peers', leaving a tombstone in every
  // generation it skips; returns the count reached.
  uint64_t catch_up(uint64_t mine, const Deadline& deadline);
  static std::string key_in(uint64_t generation, const std::string& name);
  // Publishes this rank's address record and reads the peers' (in peer order, without this
  // rank), moving to the next generation while a peer has abandoned the current one.
  std::vector<Bytes> exchange_records(const std::string& record, const Deadline& deadline);
  // Exchanges the records (context id, address, host, CPU mask) and connects the mesh.
  void connect_to_peers(const std::string& record, const Deadline& deadline);

  std::shared_ptr<Store> store_;
  int rank_;
  int size_;
  std::shared_ptr<transport::Device> device_;
  ContextOptions options_;
  std::unique_ptr<transport::Mesh> mesh_;
  const uint64_t fork_generation_;  // fork_generation() where this context was created
  const int created_in_pid_;        // that process, for the message of a forked child's call
  std::atomic<uint64_t> split_count_{0};
  uint64_t generation_ = 0;  // this is the generation_-th context of this rank on the store
  uint64_t context_id_ = 0;
  double ranks_per_core_ = 0;       // set by connect(); stays 0 for a single rank (nothing to tune)
  std::vector<std::string> hosts_;  // host identity per rank, set by connect()
  double network_beta_ = 0;         // set by create() (network_probe.h)
  bool shm_knobs_allow_ = false;    // the knobs' part of shm_collectives_allowed, read at connect

  FlightRecorder recorder_;
  void fail_as(transport::ErrorKind kind, const std::string& reason,
               const std::vector<int>& culprits, bool tell_peers, Deadline report_by);
  mutable std::mutex failure_mutex_;
  std::string failure_;
  // Set once failure_ is (under the mutex): every call asks failure(), and a working context
  // answers without the mutex or a string copy.
  std::atomic<bool> failed_{false};

  // Cancels the work in flight (see ~ContextEngine).
  // close() and the destructor: `how` is "closed by this rank" or "destroyed".
  void cancel_work_in_flight(const char* how);

  std::mutex streams_mutex_;
  // close() or the destructor ran: no new streams, no new point-to-point transfers (read
  // without the lock by the point-to-point entry points).
  std::atomic<bool> closing_{false};
  std::mutex close_mutex_;  // one close() at a time: each stops the streams and joins workers
  std::map<uint16_t, std::shared_ptr<detail::Stream>> streams_;
  std::shared_ptr<detail::PointToPointHub> point_to_point_;

  // Per stream; a null entry: the segment could not be created (the fallback is for good).
  std::mutex segments_mutex_;
  std::map<uint16_t, std::unique_ptr<HostSegment>> segments_;

  // Tag 0's stream and segment once they exist (most calls use tag 0), read without the maps'
  // mutexes: both maps only grow until the destructor clears them.
  std::atomic<detail::Stream*> default_stream_{nullptr};
  std::atomic<HostSegment*> default_segment_{nullptr};
};

// The engine of `context` (a friend of Context): the one way from the public handle to its
// engine, for core's entry points (the collectives take the handle and run on its engine).
inline ContextEngine& engine_of(const Context& context) { return *context.engine_; }

}  // namespace gloo_lite
