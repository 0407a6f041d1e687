// How much memory strangers can make the TCP store server hold. Request bodies are buffered
// whole before they run, so every body is reserved here when its header arrives: small bodies
// (the rendezvous traffic of real jobs) always get through, larger ones only while the total
// stays under a bound, and a client whose body does not fit waits, first come first served, for
// earlier bodies to complete or their senders to be dropped.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <unordered_map>
#include <vector>

#include "rendezvous/tcp_store_service.h"

namespace gloo_lite::tcp_store {

// The server's bounds, from the GLOO_LITE_STORE_* knobs.
struct ServerLimits {
  size_t client_bytes;  // largest request body one client may send
  size_t total_bytes;   // request bodies buffered for all clients together
  // A request that has begun but not completed, or a response the client does not read, for
  // longer than this gets the client dropped. Idle connections and parked get/wait requests
  // are never timed out.
  std::chrono::milliseconds stall_timeout;

  static ServerLimits from_knobs();
};

class BodyBudget {
 public:
  // Bodies up to this size never wait: a server full of large bodies still serves sets of
  // addresses and the gets of a rendezvous.
  static constexpr size_t kAlwaysAdmitted = 64 * 1024;

  explicit BodyBudget(size_t total_bytes) : total_(total_bytes) {}

  // Reserves `bytes` for `client`'s next body and returns true, or queues the client and
  // returns false. A client holds at most one reservation or one place in the queue.
  bool admit(ClientId client, size_t bytes);
  // Frees what `client` holds (its body completed, or it went away) or takes it out of the
  // queue; returns the queued clients that fit now, in their order of arrival.
  std::vector<ClientId> release(ClientId client);

  size_t reserved() const { return reserved_; }
  size_t total() const { return total_; }

 private:
  struct Waiter {
    ClientId client;
    size_t bytes;
  };
  std::vector<ClientId> admit_waiters();

  size_t total_;
  size_t reserved_ = 0;
  std::unordered_map<ClientId, size_t> held_;
  std::list<Waiter> queue_;
  std::unordered_map<ClientId, std::list<Waiter>::iterator> queued_;
};

}  // namespace gloo_lite::tcp_store
