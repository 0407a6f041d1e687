// ContextEngine's life: creation (knobs checked, rendezvous, the network figure), close and
// teardown (the work in flight cancelled), split, and the names it gives itself in messages and
// store keys. Rendezvous, failure handling, per-stream resources and the point-to-point entry
// points are the context_engine_*.cc files beside this one.
#include "gloo_lite/context_engine.h"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/engine_collectives.h"
#include "gloo_lite/flight_signal.h"
#include "gloo_lite/knobs.h"
#include "gloo_lite/live_contexts.h"
#include "gloo_lite/network_probe.h"
#include "gloo_lite/point_to_point.h"
#include "gloo_lite/shm/host_segment.h"
#include "gloo_lite/stream.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

std::string hex(uint64_t value) {
  std::ostringstream out;
  out << std::hex << value;
  return out.str();
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

bool ContextEngine::on_one_host() const {
  return std::all_of(hosts_.begin(), hosts_.end(),
                     [&](const std::string& host) { return host == hosts_.front(); });
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

std::string ContextEngine::flight_record() const {
  return recorder_.dump("flight recorder of " + describe());
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

}  // namespace gloo_lite
