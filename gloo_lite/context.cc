#include "gloo_lite/context.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/host.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/failure_report.h"
#include "gloo_lite/knobs.h"
#include "gloo_lite/work_state.h"
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

// Per-rank count of contexts created on a store: the k-th context of every rank meets under
// gloo_lite/ctx/<k>/. A counter in the store (not in the process) so that a restarted process
// continues where its predecessor stopped.
std::string generation_key(int rank) { return "gloo_lite/generation/" + std::to_string(rank); }

std::string hex(uint64_t value) {
  std::ostringstream out;
  out << std::hex << value;
  return out.str();
}

std::string address_key_name(int rank) { return "addr/" + std::to_string(rank); }

// The address record of a rank whose attempt at this context failed.
constexpr const char* kAbandoned = "abandoned";

// After a rendezvous timeout: the ranks whose context count differs from ours (they created
// more or fewer contexts on this store: a previous job on the same prefix, or a rank that
// skipped a Context::create), as " ranks 2 (at context 3), ...", or "" when all agree.
std::string generation_disagreements(Store& store, int rank, int size, uint64_t generation) {
  std::string out;
  Deadline deadline = Deadline::after(std::chrono::milliseconds(500));
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    std::string key = generation_key(peer);
    try {
      if (!store.check({key}, deadline)) {
        out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(peer) +
               " (no context yet)";
        continue;
      }
      uint64_t theirs = std::stoull(to_string(store.get(key, deadline)));
      if (theirs != generation) {
        out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(peer) +
               " (at context " + std::to_string(theirs) + ")";
      }
    } catch (const std::exception&) {
      return "";  // the store cannot tell; the caller's message stands
    }
  }
  return out;
}

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
  validate_knobs();
  if (options.timeout.count() <= 0) options.timeout = knob_ms("GLOO_LITE_TIMEOUT_MS");
  std::shared_ptr<Context> context(
      new Context(std::move(store), rank, size, std::move(device), options));
  try {
    context->connect();
  } catch (const StoreError& e) {
    throw StoreError("rank " + std::to_string(rank) + " of " + std::to_string(size) +
                     ": rendezvous through the store failed: " + e.what());
  }
  return context;
}

Context::Context(std::shared_ptr<Store> store, int rank, int size,
                 std::shared_ptr<transport::Device> device, ContextOptions options)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      device_(std::move(device)),
      options_(options),
      recorder_(static_cast<size_t>(knob_int("GLOO_LITE_FLIGHT_RECORDS"))) {}

struct Context::TagState {
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> scratch;
  size_t scratch_bytes = 0;
  std::unique_ptr<transport::Memory> scratch_memory;
  uint64_t sequence = 0;
  // The collective holding this stream's turn (nullptr: none) and its sequence number.
  const char* running = nullptr;
  uint64_t running_sequence = 0;
  bool raced = false;  // another thread entered while the running call held the turn
  std::string race;    // what that thread was told
};

Context::~Context() {
  // Registrations go before the mesh that made them.
  tags_.clear();
}

Context::TagState& Context::tag_state(uint16_t tag) {
  std::lock_guard<std::mutex> lock(tags_mutex_);
  return tag_state_locked(tag);
}

Context::TagState& Context::tag_state_locked(uint16_t tag) {
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

Context::StreamTurn::StreamTurn(Context& context, uint16_t tag, const char* collective)
    : context_(context), tag_(tag) {
  std::string clash;
  {
    std::lock_guard<std::mutex> lock(context.tags_mutex_);
    TagState* state = state_ = &context.tag_state_locked(tag);
    if (state->running == nullptr) {
      state->running = collective;
      state->running_sequence = sequence_ = state->sequence++;
      return;
    }
    clash = std::string(collective) + " on rank " + std::to_string(context.rank_) +
            " started on tag " + std::to_string(tag) + " while " + state->running + " #" +
            std::to_string(state->running_sequence) +
            " was still running on that tag in another thread: collectives with one tag are "
            "one ordered stream and must be called one at a time, in the same order on every "
            "rank; give each thread its own CollectiveOptions::tag";
    // The call holding the turn is part of the race too: it must not report success.
    state->raced = true;
    state->race = clash;
  }
  context.fail(clash);
  throw InvalidArgument(clash);
}

Context::StreamTurn::~StreamTurn() {
  std::lock_guard<std::mutex> lock(context_.tags_mutex_);
  state_->running = nullptr;
  state_->raced = false;
  state_->race.clear();
}

void Context::StreamTurn::check_not_raced() const {
  std::string race;
  {
    std::lock_guard<std::mutex> lock(context_.tags_mutex_);
    if (!state_->raced) return;
    race = state_->race;
  }
  throw InvalidArgument("another thread called a collective on tag " + std::to_string(tag_) +
                        " while this one ran, so its result cannot be trusted: " + race);
}

std::string Context::describe() const {
  return "context " + hex(context_id_) + " (rank " + std::to_string(rank_) + " of " +
         std::to_string(size_) + ")";
}

std::string Context::store_key(const std::string& name) const { return key_in(generation_, name); }

std::string Context::key_in(uint64_t generation, const std::string& name) {
  return "gloo_lite/ctx/" + std::to_string(generation) + "/" + name;
}

void Context::fail(const std::string& reason, const std::vector<int>& culprits, bool tell_peers) {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_.empty()) return;
    failure_ = reason;
  }

  // One warning per cause: the transport's own messages about this abort stay below WARN.
  // The newest calls are what explains a failure; flight_record() has them all.
  LOG_WARN("context", reason << "\n" << recorder_.dump("flight recorder of " + describe(), 12));
  if (tell_peers) mesh_->abort(reason);
  // After the peers know: a stopped store must not delay them.
  if (options_.report_failures) {
    publish_failure_report(*store_, rank_, culprits, reason,
                           Deadline::after(std::chrono::milliseconds(250)));
  }
}

std::string Context::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

std::string Context::flight_record() const {
  return recorder_.dump("flight recorder of " + describe());
}

uint64_t Context::agree_on_generation(const Deadline& deadline) {
  // Each rank counts its own contexts on this store. A rank behind the others (it skipped a
  // creation the others attempted: it had died, or not been started yet) catches up to the
  // highest count, so that a retry after a failure meets under one name. A rank can never see
  // another rank legitimately ahead: that rank's current context needs this rank's address,
  // which this rank publishes only after this step.
  return catch_up(static_cast<uint64_t>(store_->add(generation_key(rank_), 1, deadline)), deadline);
}

uint64_t Context::catch_up(uint64_t mine, const Deadline& deadline) {
  uint64_t highest = mine;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    highest =
        std::max(highest, static_cast<uint64_t>(store_->add(generation_key(peer), 0, deadline)));
  }
  if (highest == mine) return mine;
  store_->add(generation_key(rank_), static_cast<int64_t>(highest - mine), deadline);
  // A peer may still wait in a generation this rank skips: tell it to move on.
  for (uint64_t skipped = mine; skipped < highest; ++skipped) {
    store_->set(key_in(skipped, address_key_name(rank_)), to_bytes(kAbandoned), deadline);
  }
  return highest;
}

std::vector<Bytes> Context::exchange_records(const std::string& record, const Deadline& deadline) {
  for (;;) {
    store_->set(store_key(address_key_name(rank_)), to_bytes(record), deadline);
    std::vector<std::string> keys;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer != rank_) keys.push_back(store_key(address_key_name(peer)));
    }
    std::vector<Bytes> values;
    try {
      values = store_->multi_get(keys, deadline);
    } catch (const TimeoutError& e) {
      std::string others = generation_disagreements(*store_, rank_, size_, generation_);
      if (!others.empty()) {
        throw TimeoutError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                           " is creating its context number " + std::to_string(generation_) +
                           " on " + store_->describe() + " but " + others +
                           ": ranks created different numbers of contexts on this store (a "
                           "previous job on the same prefix, or a rank that skipped a "
                           "Context::create); start the job with a fresh GLOO_LITE_PREFIX");
      }
      throw TimeoutError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                         ": not every rank published its address in " + store_->describe() +
                         " before the timeout (" + e.what() +
                         "); are all ranks started with the same store and size?");
    }
    bool abandoned = false;
    for (const Bytes& value : values) abandoned = abandoned || to_string(value) == kAbandoned;
    if (!abandoned) return values;
    // A peer gave this generation up (its creation failed before this rank arrived) and
    // retries in the next one: go there too, and tell the others that wait here.
    LOG_INFO("context", "rank " << rank_ << ": context " << generation_
                                << " was abandoned by a peer; meeting in the next one");
    store_->set(store_key(address_key_name(rank_)), to_bytes(kAbandoned), deadline);
    generation_ =
        catch_up(static_cast<uint64_t>(store_->add(generation_key(rank_), 1, deadline)), deadline);
  }
}

void Context::connect_to_peers(const std::string& record, const Deadline& deadline) {
  std::vector<Bytes> values = exchange_records(record, deadline);
  std::vector<std::string> addresses(size_);
  std::vector<std::string> hosts(size_);
  std::vector<std::string> masks(size_);
  std::istringstream mine(record);
  uint64_t context_id = 0;
  mine >> context_id >> addresses[rank_] >> hosts[rank_] >> masks[rank_];
  for (size_t i = 0; i < values.size(); ++i) {
    int peer = static_cast<int>(i) + (static_cast<int>(i) >= rank_ ? 1 : 0);
    std::istringstream theirs(to_string(values[i]));
    uint64_t id = 0;
    theirs >> id >> addresses[peer] >> hosts[peer] >> masks[peer];
    if (peer == 0) context_id = id;
  }
  context_id_ = context_id;
  ranks_per_core_ = busiest_host_load(hosts, masks);
  mesh_->connect(addresses, context_id, deadline);
}

void Context::connect() {
  Deadline deadline = this->deadline();
  mesh_ = device_->create_mesh(rank_, size_, options_.mesh);
  if (size_ == 1) return;
  generation_ = agree_on_generation(deadline);
  // Rank 0 chooses the context id; it travels with rank 0's address, so every rank learns it
  // from a read it makes anyway: one set and P-1 gets per rank.
  uint64_t context_id = rank_ == 0 ? random_context_id() : 0;
  // The host and CPU mask ride along too, so that every rank derives the same host load for
  // the tuner (ranks_per_core) from the same P records.
  const std::string host = host_identity();
  const std::string cpus = usable_cpu_mask();
  const std::string record =
      std::to_string(context_id) + " " + mesh_->address() + " " + host + " " + cpus;
  try {
    connect_to_peers(record, deadline);
  } catch (...) {
    // Leave a tombstone, so that a rank that comes later does not take this attempt's address
    // for a live one but moves on to the next generation, where this rank will retry.
    try {
      store_->set(store_key(address_key_name(rank_)), to_bytes(kAbandoned),
                  Deadline::after(std::chrono::milliseconds(200)));
    } catch (...) {
    }
    throw;
  }
  LOG_DEBUG("context", "rank " << rank_ << " of " << size_ << " connected on " << device_->name());
}

std::shared_ptr<Context> Context::split(int color, int key) {
  // One allgather of (color, key) over the mesh: a split is ordered with the other tag-0
  // collectives and guarded like them, and its sub-contexts meet under a name that every rank
  // derives from the same count of splits.
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * static_cast<size_t>(size_));
  allgather(*this, mine, all.data(), 2, DataType::kInt32);
  uint64_t round = split_count_.fetch_add(1);
  if (color < 0) return nullptr;
  struct Member {
    int key;
    int rank;
  };
  std::vector<Member> members;
  for (int peer = 0; peer < size_; ++peer) {
    if (all[2 * peer] == color) members.push_back({all[2 * peer + 1], peer});
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].rank == rank_) new_rank = static_cast<int>(i);
  }
  auto sub_store = make_prefix_store(
      store_, store_key("split/" + std::to_string(round) + "/color" + std::to_string(color)));
  ContextOptions options = options_;
  options.report_failures = false;  // its ranks are not the launcher's
  try {
    return Context::create(sub_store, new_rank, static_cast<int>(members.size()), device_, options);
  } catch (const TimeoutError& e) {
    // Members that never came may have seen this context fail (a racing split, say).
    std::string parent = failure();
    if (parent.empty()) throw;
    throw TimeoutError(std::string(e.what()) + "; meanwhile the parent context failed: " + parent);
  }
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

// Provisional point-to-point work: run at once (replaced by transport-backed work).
namespace gloo_lite {
static Work finished_p2p(const std::string& what, const std::function<int()>& body) {
  auto state = std::make_shared<detail::WorkState>(what);
  try {
    state->set_source(body());
    state->set_algorithm("p2p");
    state->finish();
  } catch (const InvalidArgument&) {
    throw;
  } catch (...) {
    state->finish(std::current_exception());
  }
  return Work(state);
}
Work Context::isend(int peer, const void* data, size_t bytes, uint64_t tag,
                    std::chrono::milliseconds timeout) {
  return finished_p2p("send", [&] {
    send(peer, data, bytes, tag, timeout);
    return -1;
  });
}
Work Context::irecv(int peer, void* data, size_t bytes, uint64_t tag,
                    std::chrono::milliseconds timeout) {
  return finished_p2p("recv", [&] {
    recv(peer, data, bytes, tag, timeout);
    return peer;
  });
}
Work Context::irecv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                        std::chrono::milliseconds timeout) {
  return finished_p2p("recv", [&] { return recv_any(peers, data, bytes, tag, timeout); });
}
}  // namespace gloo_lite
