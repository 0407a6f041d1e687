// What the TCP store server does with a decoded request: the key-value table, counters, and the
// get/wait requests parked until their keys exist or their deadline passes. No I/O here: the
// server thread (tcp_store_server.cc) owns the sockets and delivers the responses this returns.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rendezvous/tcp_store_protocol.h"

namespace gloo_lite::tcp_store {

using ClientId = uint64_t;

class Service {
 public:
  using Clock = std::chrono::steady_clock;

  struct Outcome {
    enum Kind { kRespond, kParked, kViolation } kind = kRespond;
    Bytes response;         // kRespond
    std::string violation;  // kViolation: why the client must be dropped
  };
  struct Delivery {
    ClientId client;
    Bytes response;
  };

  explicit Service(std::string name) : name_(std::move(name)) {}

  Outcome handle(ClientId client, const RequestHeader& header, const std::vector<Item>& items,
                 Clock::time_point now);
  // Responses of parked requests that writes have since completed.
  std::vector<Delivery> take_ready();
  // TIMEOUT responses of parked requests whose deadline is at or before `now`.
  std::vector<Delivery> expire(Clock::time_point now);
  std::optional<Clock::time_point> next_deadline() const;
  // Drops the parked request of a client that went away.
  void forget(ClientId client);

 private:
  struct Parked {
    Op op;
    std::vector<std::string> keys;
    std::string watched;  // the first missing key: only its write can complete the request
    std::multimap<Clock::time_point, ClientId>::iterator timer;
  };

  Outcome set(const std::vector<Item>& items);
  Outcome add(const std::vector<Item>& items);
  Outcome get_or_wait(ClientId client, const RequestHeader& header, const std::vector<Item>& items,
                      Clock::time_point now);
  const std::string* first_missing(const std::vector<std::string>& keys) const;
  Bytes ok_response(Op op, const std::vector<std::string>& keys) const;
  Bytes timeout_response(const std::vector<std::string>& keys) const;
  void wrote(const std::string& key);
  void unpark(ClientId client);

  std::string name_;
  std::unordered_map<std::string, Bytes> values_;
  std::unordered_map<ClientId, Parked> parked_;
  std::unordered_map<std::string, std::unordered_set<ClientId>> watchers_;
  std::multimap<Clock::time_point, ClientId> timers_;
  std::vector<Delivery> ready_;
};

}  // namespace gloo_lite::tcp_store
