// A Context is one communicator: this process's rank among `size` ranks, connected to every
// peer through a transport mesh. Collectives and point-to-point calls run on a context.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gloo_lite/transport/transport.h"
#include "rendezvous/store.h"

namespace gloo_lite {

struct ContextOptions {
  // Deadline for connecting and default for every operation; 0 means GLOO_LITE_TIMEOUT_MS.
  std::chrono::milliseconds timeout{0};
  transport::MeshOptions mesh;
};

class Context : public std::enable_shared_from_this<Context> {
 public:
  // Connects the full mesh: each rank publishes its address (1 store set), reads the addresses
  // it needs (P-1 gets), and connects, all before the timeout. The store should be scoped to
  // this job (a fresh prefix); the context uses keys under "ctx/".
  static std::shared_ptr<Context> create(std::shared_ptr<Store> store, int rank, int size,
                                         std::shared_ptr<transport::Device> device,
                                         ContextOptions options = {});
  ~Context();

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
  // Splits into sub-contexts like MPI_Comm_split: ranks with equal `color` form one context,
  // ordered by (key, old rank). A negative color returns nullptr (the rank joins none).
  // Collective over this context; O(P) store operations per rank.
  std::shared_ptr<Context> split(int color, int key);

  // Point-to-point on host buffers with this context's timeout (or `timeout` when non-zero).
  void send(int peer, const void* data, size_t bytes, uint64_t tag,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  void recv(int peer, void* data, size_t bytes, uint64_t tag,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Receives from whichever of `peers` sends first; returns that rank.
  int recv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  // Fails this rank's connections with `reason`, telling peers so they fail promptly.
  void abort(const std::string& reason);

  // Per-tag state of the collectives. Collectives with one tag run one at a time (each tag is
  // one ordered stream of calls); different tags may run concurrently from different threads.
  struct ScratchSpace {
    uint8_t* data = nullptr;
    transport::Memory* memory = nullptr;
  };
  // Scratch memory of at least `bytes` for collectives with `tag`: reused across calls and only
  // grown, so that steady-state collectives allocate (and first-touch) nothing.
  ScratchSpace scratch(uint16_t tag, size_t bytes);
  // The sequence number of the next collective with `tag` (0, 1, 2, ...).
  uint64_t next_sequence(uint16_t tag);

 private:
  Context(std::shared_ptr<Store> store, int rank, int size,
          std::shared_ptr<transport::Device> device, ContextOptions options);
  void connect();

  std::shared_ptr<Store> store_;
  int rank_;
  int size_;
  std::shared_ptr<transport::Device> device_;
  ContextOptions options_;
  std::unique_ptr<transport::Mesh> mesh_;
  uint64_t split_count_ = 0;
  double ranks_per_core_ = 0;  // set by connect(); stays 0 for a single rank (nothing to tune)

  struct TagState;
  std::mutex tags_mutex_;
  std::map<uint16_t, std::unique_ptr<TagState>> tags_;
  TagState& tag_state(uint16_t tag);
};

}  // namespace gloo_lite
