// ContextEngine's rendezvous: each rank counts its contexts on the store (the generation under
// whose keys they meet, caught up with the peers'), publishes its record (context id, address,
// host, CPU mask, network figure), reads the peers', and connects the mesh; a failed attempt
// leaves a tombstone so that the others move on to the next generation. The timeout messages
// name the missing ranks or the ranks at another generation.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/host.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/hang_report.h"
#include "gloo_lite/transport/names.h"

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

}  // namespace gloo_lite
