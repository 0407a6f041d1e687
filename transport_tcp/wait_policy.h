// How a waiting thread waits for its sockets (docs/transport.md, Waiting policy): it polls them
// without sleeping for a bounded, adaptive time, yielding the CPU between polls when ranks
// outnumber cores, and only then sleeps in poll(). Small messages on a host with a core to
// spare then cost no wake-up at all; a wait that is long anyway costs at most one spin.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace gloo_lite::tcp {

class WaitPolicy {
 public:
  using Micros = std::chrono::microseconds;

  // The bound and the manner of spinning. `limit` 0 never spins. `yield`: sched_yield between
  // polls, so that a rank that shares its core lets the peer it waits for run.
  void configure(Micros limit, bool yield);
  // From GLOO_LITE_SPIN_US (set: its value is the bound) or, unset, from the load of the host:
  // kFreeCoreLimit with a core per rank, kSharedCoreLimit with yields when ranks outnumber
  // cores.
  void configure_for(double ranks_per_core);

  // How long the next wait may poll before it sleeps; 0: sleep at once.
  Micros budget() const { return budget_; }
  bool yields() const { return yield_; }
  Micros limit() const { return limit_; }

  // Adapts the budget to how the last wait went: it ended while spinning (`caught`), or after
  // `waited` in all (spin and sleep). A wait that a spin caught, or that a spin up to the limit
  // would have caught, grows the budget (doubling, towards the limit); one longer than the limit
  // halves it, so that ranks blocked for long (a slow peer, an idle phase) soon stop spinning.
  void record(bool caught, std::chrono::nanoseconds waited);

  static constexpr Micros kFreeCoreLimit{50};
  static constexpr Micros kSharedCoreLimit{100};
  // Where a budget that fell to 0 restarts when short waits come back.
  static constexpr Micros kRestart{4};

 private:
  Micros limit_{0};
  Micros budget_{0};
  bool yield_ = false;
};

// Ranks of a job on this host per CPU this process may use, from the peers' listening addresses
// (peers with this rank's host part count as local) and this process's CPU mask.
double local_ranks_per_core(const std::string& my_address, const std::vector<std::string>& peers);

}  // namespace gloo_lite::tcp
