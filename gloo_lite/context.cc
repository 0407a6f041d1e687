#include "gloo_lite/context.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <sstream>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/host.h"
#include "gloo_lite/base/log.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

// Ranks per usable CPU on the most crowded host: ranks are grouped by host identity and each
// group's CPU masks merged (ranks bound to different cores of one host do not share them).
double busiest_host_load(const std::vector<std::string>& hosts,
                         const std::vector<std::string>& masks) {
  std::map<std::string, std::pair<int, std::string>> by_host;  // ranks, merged mask
  for (size_t r = 0; r < hosts.size(); ++r) {
    auto& [ranks, mask] = by_host[hosts[r]];
    ranks += 1;
    mask = merge_cpu_masks(mask, masks[r]);
  }
  double load = 0;
  for (const auto& [host, group] : by_host) {
    load = std::max(load, double(group.first) / std::max(1, count_cpus(group.second)));
  }
  return load;
}

uint64_t random_context_id() {
  std::random_device device;
  uint64_t id = (uint64_t{device()} << 32) ^ device();
  id ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  id ^= static_cast<uint64_t>(getpid()) << 17;
  return id == 0 ? 1 : id;
}

std::string address_key(int rank) { return "gloo_lite/addr/" + std::to_string(rank); }

}  // namespace

std::shared_ptr<Context> Context::create(std::shared_ptr<Store> store, int rank, int size,
                                         std::shared_ptr<transport::Device> device,
                                         ContextOptions options) {
  if (!store) throw InvalidArgument("Context::create: no store");
  if (!device) throw InvalidArgument("Context::create: no transport device");
  if (size < 1 || rank < 0 || rank >= size) {
    throw InvalidArgument("Context::create: rank " + std::to_string(rank) + " of size " +
                          std::to_string(size) + " is out of range (0 <= rank < size)");
  }
  if (options.timeout.count() <= 0) options.timeout = knob_ms("GLOO_LITE_TIMEOUT_MS");
  std::shared_ptr<Context> context(
      new Context(std::move(store), rank, size, std::move(device), options));
  context->connect();
  return context;
}

Context::Context(std::shared_ptr<Store> store, int rank, int size,
                 std::shared_ptr<transport::Device> device, ContextOptions options)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      device_(std::move(device)),
      options_(options) {}

struct Context::TagState {
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> scratch;
  size_t scratch_bytes = 0;
  std::unique_ptr<transport::Memory> scratch_memory;
  uint64_t sequence = 0;
};

Context::~Context() {
  // Registrations go before the mesh that made them.
  tags_.clear();
}

Context::TagState& Context::tag_state(uint16_t tag) {
  std::lock_guard<std::mutex> lock(tags_mutex_);
  auto& state = tags_[tag];
  if (!state) state = std::make_unique<TagState>();
  return *state;
}

Context::ScratchSpace Context::scratch(uint16_t tag, size_t bytes) {
  TagState& state = tag_state(tag);
  if (bytes > state.scratch_bytes || !state.scratch_memory) {
    // Grow by half again so a sweep of rising sizes reallocates O(log) times.
    size_t capacity =
        std::max<size_t>({bytes, state.scratch_bytes + state.scratch_bytes / 2, 4096});
    capacity = (capacity + 63) / 64 * 64;
    state.scratch_memory.reset();
    state.scratch.reset(static_cast<uint8_t*>(std::aligned_alloc(64, capacity)));
    if (!state.scratch)
      throw Error("cannot allocate " + std::to_string(capacity) + " bytes of scratch");
    state.scratch_bytes = capacity;
    state.scratch_memory = mesh_->register_memory(state.scratch.get(), capacity);
  }
  return {state.scratch.get(), state.scratch_memory.get()};
}

uint64_t Context::next_sequence(uint16_t tag) { return tag_state(tag).sequence++; }

void Context::connect() {
  Deadline deadline = this->deadline();
  mesh_ = device_->create_mesh(rank_, size_, options_.mesh);
  if (size_ == 1) return;
  // Rank 0 chooses the context id; it travels with rank 0's address, so every rank learns it
  // from a read it makes anyway: one set and P-1 gets per rank.
  uint64_t context_id = rank_ == 0 ? random_context_id() : 0;
  // The host and CPU mask ride along too, so that every rank derives the same host load for
  // the tuner (ranks_per_core) from the same P records.
  const std::string host = host_identity();
  const std::string cpus = usable_cpu_mask();
  store_->set(address_key(rank_), to_bytes(std::to_string(context_id) + " " + mesh_->address() +
                                           " " + host + " " + cpus));
  std::vector<std::string> keys;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) keys.push_back(address_key(peer));
  }
  std::vector<Bytes> values;
  try {
    values = store_->multi_get(keys, deadline);
  } catch (const TimeoutError& e) {
    throw TimeoutError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                       ": not every rank published its address in " + store_->describe() +
                       " before the timeout (" + e.what() +
                       "); are all ranks started with the same store and size?");
  }
  std::vector<std::string> addresses(size_);
  std::vector<std::string> hosts(size_);
  std::vector<std::string> masks(size_);
  addresses[rank_] = mesh_->address();
  hosts[rank_] = host;
  masks[rank_] = cpus;
  for (size_t i = 0; i < keys.size(); ++i) {
    int peer = static_cast<int>(i) + (static_cast<int>(i) >= rank_ ? 1 : 0);
    std::istringstream record(to_string(values[i]));
    uint64_t id = 0;
    record >> id >> addresses[peer] >> hosts[peer] >> masks[peer];
    if (peer == 0) context_id = id;
  }
  ranks_per_core_ = busiest_host_load(hosts, masks);
  mesh_->connect(addresses, context_id, deadline);
  LOG_DEBUG("context", "rank " << rank_ << " of " << size_ << " connected on " << device_->name());
}

std::shared_ptr<Context> Context::split(int color, int key) {
  Deadline deadline = this->deadline();
  std::string round = "gloo_lite/split/" + std::to_string(split_count_++);
  store_->set(round + "/" + std::to_string(rank_),
              to_bytes(std::to_string(color) + " " + std::to_string(key)));
  std::vector<std::string> keys;
  for (int peer = 0; peer < size_; ++peer) keys.push_back(round + "/" + std::to_string(peer));
  std::vector<Bytes> values = store_->multi_get(keys, deadline);
  struct Member {
    int key;
    int rank;
  };
  std::vector<Member> members;
  for (int peer = 0; peer < size_; ++peer) {
    std::istringstream record(to_string(values[peer]));
    int peer_color = 0;
    int peer_key = 0;
    record >> peer_color >> peer_key;
    if (color >= 0 && peer_color == color) members.push_back({peer_key, peer});
  }
  if (color < 0) return nullptr;
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].rank == rank_) new_rank = static_cast<int>(i);
  }
  auto sub_store = make_prefix_store(store_, round + "/color" + std::to_string(color));
  return Context::create(sub_store, new_rank, static_cast<int>(members.size()), device_, options_);
}

static Deadline deadline_for(std::chrono::milliseconds timeout,
                             std::chrono::milliseconds fallback) {
  return Deadline::after(timeout.count() > 0 ? timeout : fallback);
}

void Context::send(int peer, const void* data, size_t bytes, uint64_t tag,
                   std::chrono::milliseconds timeout) {
  auto memory = mesh_->register_memory(const_cast<void*>(data), bytes);
  auto request = mesh_->send(peer, tag, *memory, 0, bytes);
  mesh_->wait({request}, deadline_for(timeout, options_.timeout));
}

void Context::recv(int peer, void* data, size_t bytes, uint64_t tag,
                   std::chrono::milliseconds timeout) {
  recv_any({peer}, data, bytes, tag, timeout);
}

int Context::recv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                      std::chrono::milliseconds timeout) {
  auto memory = mesh_->register_memory(data, bytes);
  auto request = mesh_->recv(peers, tag, *memory, 0, bytes);
  mesh_->wait({request}, deadline_for(timeout, options_.timeout));
  return request->source();
}

void Context::abort(const std::string& reason) { mesh_->abort(reason); }

}  // namespace gloo_lite
