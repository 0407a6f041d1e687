#include "gloo_lite/context_engine.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/host.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/engine_collectives.h"
#include "gloo_lite/failure_report.h"
#include "gloo_lite/flight_signal.h"
#include "gloo_lite/hang_report.h"
#include "gloo_lite/host_segment.h"
#include "gloo_lite/knobs.h"
#include "gloo_lite/live_contexts.h"
#include "gloo_lite/network_probe.h"
#include "gloo_lite/point_to_point.h"
#include "gloo_lite/stream.h"
#include "gloo_lite/transport/names.h"
#include "gloo_lite/transport/tag_space.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

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
// skipped a Context::create), as " ranks 2 (at context 3), ...", or "" when all agree. Ranks
// that never began a context are listed beside a disagreement, but alone they are simply
// missing (the caller's timeout message names them): "".
std::string generation_disagreements(Store& store, int rank, int size, uint64_t generation) {
  std::vector<int> never_began;
  std::map<uint64_t, std::vector<int>> elsewhere;  // by the context number they are at
  Deadline deadline = Deadline::after(std::chrono::milliseconds(500));
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    if (deadline.expired()) return "";  // too many ranks to read in time; the caller's message
    std::string key = generation_key(peer);
    try {
      // A count of 0 is a rank that never began a context: an absent key reads as 0 (catch_up()
      // reads the peers' counters with add(key, 0)).
      uint64_t theirs =
          store.check({key}, deadline) ? std::stoull(to_string(store.get(key, deadline))) : 0;
      if (theirs == 0) {
        never_began.push_back(peer);
      } else if (theirs != generation) {
        elsewhere[theirs].push_back(peer);
      }
    } catch (const std::exception&) {
      return "";  // the store cannot tell; the caller's message stands
    }
  }
  if (elsewhere.empty()) return "";
  auto ranks = [](const std::vector<int>& list) {
    return (list.size() == 1 ? "rank " : "ranks ") + rank_list(list);
  };
  std::string out;
  for (const auto& [number, peers] : elsewhere) {
    out +=
        (out.empty() ? "" : ", ") + ranks(peers) + " (at context " + std::to_string(number) + ")";
  }
  if (!never_began.empty()) out += ", " + ranks(never_began) + " (no context yet)";
  return out;
}

// After a rendezvous timeout: "rank 3" or "ranks 1, 3", the peers whose address key is still
// missing ("not every rank" when the store cannot tell).
std::string missing_ranks_in(Store& store, const std::vector<std::string>& keys,
                             const std::vector<int>& ranks) {
  std::vector<int> missing;
  size_t checked = 0;
  try {
    Deadline deadline = Deadline::after(std::chrono::milliseconds(500));
    for (; checked < keys.size() && !deadline.expired(); ++checked) {
      if (!store.check({keys[checked]}, deadline)) missing.push_back(ranks[checked]);
    }
  } catch (const std::exception&) {
    return "not every rank";
  }
  if (missing.empty()) return "not every rank";
  std::string out = (missing.size() == 1 ? "rank " : "ranks ") + rank_list(missing);
  if (checked < keys.size()) {
    out += " (of the first " + std::to_string(checked) + " of " + std::to_string(keys.size()) +
           " peers checked; maybe more)";
  }
  return out;
}

// The cross-host figure this rank brings to creation, seconds per byte, 0 for none (the probe
// then measures it): GLOO_LITE_NET_BETA_GBPS, which the cost model prefers, else the creator's
// (ContextOptions::network_beta, a split's parent). Its bits travel in the connect record.
uint64_t given_network_beta_bits(const ContextOptions& options) {
  double beta = algo::CostModel::get().net_beta;
  if (beta == 0 && options.network_beta > 0) beta = options.network_beta;
  uint64_t bits = 0;
  std::memcpy(&bits, &beta, sizeof bits);
  return bits;
}

// Throws InvalidArgument naming the groups of ranks that bring different figures (bits per
// rank, from the records): every rank derives the same groups, so all fail alike, before the
// mesh connects and well before the probe would wait on the ranks that skip it.
void require_one_network_beta(int rank, const std::vector<uint64_t>& bits) {
  std::map<uint64_t, std::vector<int>> groups;
  for (int r = 0; r < static_cast<int>(bits.size()); ++r) groups[bits[r]].push_back(r);
  if (groups.size() < 2) return;
  std::string text;
  for (const auto& [value, ranks] : groups) {
    double beta = 0;
    std::memcpy(&beta, &value, sizeof beta);
    std::string list;
    for (size_t i = 0; i < ranks.size() && i < 8; ++i) {
      list += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
    }
    if (ranks.size() > 8) list += " and " + std::to_string(ranks.size() - 8) + " more";
    std::ostringstream figure;
    if (beta > 0) {
      figure << 1 / (beta * 1e9) << " GB/s";
    } else {
      figure << "none (the probe measures it)";
    }
    text += (text.empty() ? "" : "; ") + std::string(ranks.size() > 1 ? "ranks " : "rank ") + list +
            ": " + figure.str();
  }
  throw InvalidArgument("rank " + std::to_string(rank) + " of " + std::to_string(bits.size()) +
                        ": the ranks of a context that spans hosts disagree on the network figure "
                        "(GLOO_LITE_NET_BETA_GBPS, else ContextOptions::network_beta): " +
                        text + ". Set GLOO_LITE_NET_BETA_GBPS alike on every rank, or on none");
}

}  // namespace

std::shared_ptr<ContextEngine> ContextEngine::create(std::shared_ptr<Store> store, int rank,
                                                     int size,
                                                     std::shared_ptr<transport::Device> device,
                                                     ContextOptions options) {
  if (!store) throw InvalidArgument("Context::create: no store");
  if (!device) throw InvalidArgument("Context::create: no transport device");
  if (size < 1 || rank < 0 || rank >= size) {
    throw InvalidArgument("Context::create: rank " + std::to_string(rank) + " of size " +
                          std::to_string(size) + " is out of range (0 <= rank < size)");
  }
  validate_knobs();
  install_flight_signal();
  if (options.timeout.count() <= 0) options.timeout = knob_ms("GLOO_LITE_TIMEOUT_MS");
  count_forks();
  // A forked child's last reference leaks the context (see forked()): its destructor would
  // tear the parent's connections down, and join threads that do not exist in the child.
  std::shared_ptr<ContextEngine> context(
      new ContextEngine(std::move(store), rank, size, std::move(device), options),
      [](ContextEngine* context) {
        if (!context->forked()) delete context;
      });
  try {
    context->connect();
  } catch (const StoreError& e) {
    throw StoreError("rank " + std::to_string(rank) + " of " + std::to_string(size) +
                     ": rendezvous through the store failed: " + e.what());
  }
  // Connected: its id is known, and a flight recorder dump (by signal) may show it.
  register_live_context(context.get());
  // The cross-host figure for the tuner, before any auto choice can need it: given, or
  // measured by the ranks together (nothing on one host, nor where the knob gives it).
  if (options.network_beta > 0) {
    context->network_beta_ = options.network_beta;
  } else if (algo::CostModel::get().net_beta == 0) {
    context->network_beta_ = measure_network_beta(*context);
  }
  return context;
}

ContextEngine::ContextEngine(std::shared_ptr<Store> store, int rank, int size,
                             std::shared_ptr<transport::Device> device, ContextOptions options)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      device_(std::move(device)),
      options_(options),
      fork_generation_(fork_generation()),
      created_in_pid_(static_cast<int>(getpid())),
      recorder_(static_cast<size_t>(knob_int("GLOO_LITE_FLIGHT_RECORDS"))),
      point_to_point_(std::make_shared<detail::PointToPointHub>()) {}

ContextEngine::~ContextEngine() {
  unregister_live_context(this);  // first: a dump in progress finishes before teardown
  if (mesh_) cancel_work_in_flight("destroyed");
  default_stream_.store(nullptr);
  default_segment_.store(nullptr);
  // Registrations go before the mesh that made them.
  for (auto& [tag, stream] : streams_) stream->release_scratch();
  streams_.clear();
  // No call runs any more: the segments may go (peers still waiting on this rank fail).
  segments_.clear();
}

void ContextEngine::close() {
  // A forked child's copy must not abort the parent's peers (its running calls are the parent's).
  if (forked()) return;
  // Two threads closing at once must not both stop the streams (each joins their workers).
  std::lock_guard<std::mutex> lock(close_mutex_);
  cancel_work_in_flight("closed by this rank");
}

void ContextEngine::cancel_work_in_flight(const char* how) {
  std::vector<std::shared_ptr<detail::Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    closing_.store(true, std::memory_order_release);
    for (auto& [tag, stream] : streams_) streams.push_back(stream);
  }
  size_t in_flight = point_to_point_->pending();
  std::string running;  // the collectives that hold a turn, named as the flight recorder does
  for (const auto& stream : streams) {
    in_flight += stream->in_flight();
    std::string call = stream->running();
    if (!call.empty()) running += (running.empty() ? " (" : ", ") + call;
  }
  std::string why = describe() + " was " + how + " with " + std::to_string(in_flight) +
                    " operation(s) in flight" + (running.empty() ? "" : running + ")") +
                    "; they were cancelled";
  // Peers must learn it, and the running calls must end: abort the mesh even when the context
  // had failed before (a failure relayed from a peer leaves the mesh up).
  if (in_flight > 0) {
    fail(why, {}, /*tell_peers=*/false);
    mesh_->abort(why);
  }
  auto error = std::make_exception_ptr(ConnectionError(why));
  for (const auto& stream : streams) stream->stop(error);
  point_to_point_->close(*mesh_, error);
}

detail::Stream& ContextEngine::stream(uint16_t tag) {
  if (tag == 0) {
    if (detail::Stream* known = default_stream_.load(std::memory_order_acquire)) return *known;
  }
  std::lock_guard<std::mutex> lock(streams_mutex_);
  auto found = streams_.find(tag);
  if (found != streams_.end()) return *found->second;
  if (closing_.load(std::memory_order_relaxed)) {
    throw ConnectionError(describe() + " was closed or is being destroyed; create a new context");
  }
  detail::Stream& made =
      *streams_.emplace(tag, std::make_shared<detail::Stream>(*this, tag)).first->second;
  if (tag == 0) default_stream_.store(&made, std::memory_order_release);
  return made;
}

ContextEngine::ScratchSpace ContextEngine::scratch(uint16_t tag, size_t bytes) {
  detail::Stream::Scratch space = stream(tag).scratch(*mesh_, bytes);
  return {space.data, space.memory};
}

bool ContextEngine::on_one_host() const {
  return std::all_of(hosts_.begin(), hosts_.end(),
                     [&](const std::string& host) { return host == hosts_.front(); });
}

HostSegment* ContextEngine::host_segment(const algo::Call& call, size_t chunk_bytes,
                                         const std::string& group,
                                         const std::vector<int>& group_ranks) {
  const uint16_t tag = tags::stream_of(call.tag);
  if (tag == 0) {
    if (HostSegment* known = default_segment_.load(std::memory_order_acquire)) return known;
  }
  {
    std::lock_guard<std::mutex> lock(segments_mutex_);
    auto found = segments_.find(tag);
    if (found != segments_.end()) return found->second.get();
  }
  // Outside the lock: attaching waits for the peers, and fail() must not wait for that. Only
  // an agreed verdict falls back; a peer that never comes fails the call like any other.
  std::unique_ptr<HostSegment> segment;
  try {
    segment = HostSegment::attach(*this, call, chunk_bytes, group, group_ranks);
  } catch (const SegmentUnavailable& e) {
    std::string text = "shared-memory collectives on tag " + std::to_string(tag) + " of " +
                       describe() + (group.empty() ? "" : " (group " + group + ")") +
                       " are not available (" + e.what() +
                       "); using the message algorithms instead";
    if (call.rank == 0) {  // the group's first rank: one warning per segment
      LOG_WARN("coll", text);
    } else {
      LOG_INFO("coll", text);
    }
  }
  std::lock_guard<std::mutex> lock(segments_mutex_);
  HostSegment* raw = segment.get();
  segments_[tag] = std::move(segment);
  if (tag == 0 && raw != nullptr) default_segment_.store(raw, std::memory_order_release);
  // A failure that came while attaching must reach this segment's waiters as well.
  std::string failed = failure();
  if (raw != nullptr && !failed.empty()) {
    raw->abort(rank_, transport::ErrorKind::kConnection, failed);
  }
  return raw;
}

void ContextEngine::throw_closed(const char* what) const {
  throw ConnectionError(std::string(what) + " on " + describe() +
                        ": the context was closed on this rank; create a new context");
}

void ContextEngine::throw_forked(const char* what) const {
  throw InvalidArgument(
      forked_child_message(std::string(what) + " on " + describe(), created_in_pid_));
}

std::string ContextEngine::describe() const {
  return "context " + hex(context_id_) + " (rank " + std::to_string(rank_) + " of " +
         std::to_string(size_) + ")";
}

std::string ContextEngine::store_key(const std::string& name) const {
  return key_in(generation_, name);
}

std::string ContextEngine::key_in(uint64_t generation, const std::string& name) {
  return "gloo_lite/ctx/" + std::to_string(generation) + "/" + name;
}

void ContextEngine::fail(const std::string& reason, const std::vector<int>& culprits,
                         bool tell_peers, Deadline report_by) {
  fail_as(transport::ErrorKind::kConnection, reason, culprits, tell_peers, report_by);
}

void ContextEngine::fail_with(transport::ErrorKind kind, const std::string& reason,
                              bool tell_peers) {
  fail_as(kind, reason, {}, tell_peers, Deadline::never());
}

void ContextEngine::fail_as(transport::ErrorKind kind, const std::string& reason,
                            const std::vector<int>& culprits, bool tell_peers, Deadline report_by) {
  // Only a caller reaches here in a forked child (no thread of the parent runs there): an abort
  // from the child would reach the parent's peers.
  require_creating_process("abort");
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_.empty()) return;
    failure_ = reason;
    failed_.store(true, std::memory_order_release);
  }

  // One warning per cause: the transport's own messages about this abort stay below WARN.
  // The newest calls are what explains a failure; flight_record() has them all.
  LOG_WARN("context", reason << "\n" << recorder_.dump("flight recorder of " + describe(), 12));
  {
    // Peers waiting in a shared segment hear nothing from the mesh: fail them there too. Before
    // the mesh: a peer that heard of it through the mesh first would relay it into the segments
    // as its own (their abort record keeps the first writer's cause).
    // A failure that reached this rank through the mesh goes on as its origin's cause.
    transport::AbortCause cause = mesh_->failure_cause();
    if (!cause.known()) cause = {rank_, reason};
    std::lock_guard<std::mutex> lock(segments_mutex_);
    for (auto& [tag, segment] : segments_) {
      if (segment) segment->abort(rank_, kind, cause);
    }
  }
  if (tell_peers) {
    if (kind == transport::ErrorKind::kConnection) {
      mesh_->abort(reason);
    } else {
      mesh_->abort_with(kind, reason);
    }
  }
  // After the peers know: a stopped store must not delay them.
  if (options_.report_failures) {
    publish_failure_report(*store_, rank_, culprits, reason,
                           Deadline::after(std::chrono::milliseconds(250)).earlier(report_by));
  }
}

std::string ContextEngine::failure() const {
  if (!failed_.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

std::string ContextEngine::flight_record() const {
  return recorder_.dump("flight recorder of " + describe());
}

uint64_t ContextEngine::agree_on_generation(const Deadline& deadline) {
  // Each rank counts its own contexts on this store. A rank behind the others (it skipped a
  // creation the others attempted: it had died, or not been started yet) catches up to the
  // highest count, so that a retry after a failure meets under one name. A rank can never see
  // another rank legitimately ahead: that rank's current context needs this rank's address,
  // which this rank publishes only after this step.
  return catch_up(static_cast<uint64_t>(store_->add(generation_key(rank_), 1, deadline)), deadline);
}

uint64_t ContextEngine::catch_up(uint64_t mine, const Deadline& deadline) {
  uint64_t highest = mine;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    // Each read returns well within the deadline, but P of them need not (10^5 on a file store
    // took 18 s against a 3 s timeout): the deadline bounds the loop too.
    if (deadline.expired()) {
      throw TimeoutError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                         ": the timeout passed while reading the context counts of the other "
                         "ranks from " +
                         store_->describe() + " (at rank " + std::to_string(peer) +
                         "); a store this slow for " + std::to_string(size_) +
                         " ranks needs a longer timeout");
    }
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

std::vector<Bytes> ContextEngine::exchange_records(const std::string& record,
                                                   const Deadline& deadline) {
  for (;;) {
    store_->set(store_key(address_key_name(rank_)), to_bytes(record), deadline);
    std::vector<std::string> keys;
    std::vector<int> peers;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      keys.push_back(store_key(address_key_name(peer)));
      peers.push_back(peer);
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
      throw TimeoutError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " +
                         missing_ranks_in(*store_, keys, peers) +
                         " did not publish an address in " + store_->describe() +
                         " before the timeout (" + e.what() +
                         "); are all ranks started, with the same store and size?");
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

void ContextEngine::connect_to_peers(const std::string& record, const Deadline& deadline) {
  std::vector<Bytes> values = exchange_records(record, deadline);
  std::vector<std::string> addresses(size_);
  std::vector<std::string> hosts(size_);
  std::vector<std::string> masks(size_);
  std::vector<uint64_t> betas(size_, 0);
  std::istringstream mine(record);
  uint64_t context_id = 0;
  mine >> context_id >> addresses[rank_] >> hosts[rank_] >> masks[rank_] >> betas[rank_];
  for (size_t i = 0; i < values.size(); ++i) {
    int peer = static_cast<int>(i) + (static_cast<int>(i) >= rank_ ? 1 : 0);
    std::istringstream theirs(to_string(values[i]));
    uint64_t id = 0;
    theirs >> id >> addresses[peer] >> hosts[peer] >> masks[peer] >> betas[peer];
    if (peer == 0) context_id = id;
  }
  // Whether the probe runs, and the figure the tuner ranks with, must be one for all ranks:
  // on one host no figure is used, across hosts differing ones fail here.
  if (std::any_of(hosts.begin(), hosts.end(),
                  [&](const std::string& host) { return host != hosts.front(); })) {
    require_one_network_beta(rank_, betas);
  }
  context_id_ = context_id;
  ranks_per_core_ = busiest_host_load(hosts, masks);
  hosts_ = hosts;
  mesh_->connect(addresses, context_id, deadline);
}

void ContextEngine::connect() {
  Deadline deadline = this->deadline();
  mesh_ = device_->create_mesh(rank_, size_, options_.mesh);
  const std::string transport = knob_string("GLOO_LITE_TRANSPORT");
  shm_knobs_allow_ = knob_bool("GLOO_LITE_SHM_COLLECTIVES") &&
                     (transport == "auto" || transport == transport::kShmTransport);
  if (size_ == 1) return;
  generation_ = agree_on_generation(deadline);
  // Rank 0 chooses the context id; it travels with rank 0's address, so every rank learns it
  // from a read it makes anyway: one set and P-1 gets per rank.
  uint64_t context_id = rank_ == 0 ? random_context_id() : 0;
  // The host and CPU mask ride along too, so that every rank derives the same host load for
  // the tuner (ranks_per_core) from the same P records; so does the network figure this rank
  // was given, which all ranks must share (require_one_network_beta).
  const std::string host = host_identity();
  const std::string cpus = usable_cpu_mask();
  const std::string record = std::to_string(context_id) + " " + mesh_->address() + " " + host +
                             " " + cpus + " " + std::to_string(given_network_beta_bits(options_));
  try {
    connect_to_peers(record, deadline);
  } catch (const InvalidArgument&) {
    // A configuration error every rank derives from the same records (a forced transport that
    // cannot serve some pair): no tombstone, so that a rank reading the records later fails
    // with the same error instead of waiting for its deadline in the next generation.
    throw;
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

std::shared_ptr<ContextEngine> ContextEngine::split(int color, int key) {
  // One allgather of (color, key) over the mesh: a split is ordered with the other tag-0
  // collectives and guarded like them, and its sub-contexts meet under a name that every rank
  // derives from the same count of splits.
  require_creating_process("split");
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
  options.report_failures = false;       // its ranks are not the launcher's
  options.network_beta = network_beta_;  // the same links: no second probe
  try {
    return ContextEngine::create(sub_store, new_rank, static_cast<int>(members.size()), device_,
                                 options);
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

// Point-to-point tags are the user's half of the tag space (gloo_lite/transport/tag_space.h).
// Also the calls' check that this is the context's process.
// The checks every point-to-point entry point makes before it touches the transport; returns
// the tag on the wire.
static uint64_t point_to_point_tag(const char* what, const ContextEngine& context, int peer,
                                   uint64_t tag, const void* data, size_t bytes) {
  context.require_creating_process(what);
  context.require_open(what);
  if (tag > tags::kMaxUserTag) {
    throw InvalidArgument(std::string(what) + " on rank " + std::to_string(context.rank()) +
                          " with rank " + std::to_string(peer) + ": tag " + std::to_string(tag) +
                          " is out of range; point-to-point tags are 0 <= tag < 2^63");
  }
  detail::check_transfer_buffer(what, context.rank(), peer, data, bytes);
  return tags::point_to_point(tag);
}

Work ContextEngine::isend(int peer, const void* data, size_t bytes, uint64_t tag,
                          std::chrono::milliseconds timeout) {
  uint64_t wire_tag = point_to_point_tag("send", *this, peer, tag, data, bytes);
  auto work = std::make_shared<detail::PointToPointWork>(
      detail::PointToPointWork::Kind{true, peer, 1, tag}, point_to_point_, *mesh_,
      mesh_->register_memory(const_cast<void*>(data), bytes),
      deadline_for(timeout, options_.timeout));
  work->set_request(mesh_->send(peer, wire_tag, work->memory(), 0, bytes));
  point_to_point_->add(work);
  return Work(work);
}

Work ContextEngine::irecv(int peer, void* data, size_t bytes, uint64_t tag,
                          std::chrono::milliseconds timeout) {
  return irecv_any({peer}, data, bytes, tag, timeout);
}

Work ContextEngine::irecv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                              std::chrono::milliseconds timeout) {
  int first = peers.empty() ? -1 : peers[0];
  uint64_t wire_tag = point_to_point_tag("recv", *this, first, tag, data, bytes);
  auto work = std::make_shared<detail::PointToPointWork>(
      detail::PointToPointWork::Kind{false, first, peers.size(), tag}, point_to_point_, *mesh_,
      mesh_->register_memory(data, bytes), deadline_for(timeout, options_.timeout));
  work->set_request(mesh_->recv(peers, wire_tag, work->memory(), 0, bytes));
  point_to_point_->add(work);
  return Work(work);
}

// The blocking forms post like the non-blocking ones but wait on the request directly: no Work
// to allocate and track, since nothing outlives the call.
void ContextEngine::send(int peer, const void* data, size_t bytes, uint64_t tag,
                         std::chrono::milliseconds timeout) {
  uint64_t wire_tag = point_to_point_tag("send", *this, peer, tag, data, bytes);
  auto memory = mesh_->register_memory(const_cast<void*>(data), bytes);
  auto request = mesh_->send(peer, wire_tag, *memory, 0, bytes);
  mesh_->wait({request}, deadline_for(timeout, options_.timeout));
}

void ContextEngine::recv(int peer, void* data, size_t bytes, uint64_t tag,
                         std::chrono::milliseconds timeout) {
  recv_any({peer}, data, bytes, tag, timeout);
}

int ContextEngine::recv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                            std::chrono::milliseconds timeout) {
  uint64_t wire_tag =
      point_to_point_tag("recv", *this, peers.empty() ? -1 : peers[0], tag, data, bytes);
  auto memory = mesh_->register_memory(data, bytes);
  auto request = mesh_->recv(peers, wire_tag, *memory, 0, bytes);
  mesh_->wait({request}, deadline_for(timeout, options_.timeout));
  return request->source();
}

bool ContextEngine::mesh_failed() const { return mesh_->failure_cause().known(); }

void ContextEngine::relay_to_peers(const transport::AbortCause& cause, transport::ErrorKind kind) {
  if (kind == transport::ErrorKind::kConnection) {
    mesh_->abort_relayed(cause);
  } else {
    mesh_->relay_abort(kind, cause);
  }
}

void ContextEngine::abort(const std::string& reason) {
  fail(reason, {}, /*tell_peers=*/false);
  mesh_->abort(reason);  // also when the context had failed before: work in flight must end
}

}  // namespace gloo_lite
