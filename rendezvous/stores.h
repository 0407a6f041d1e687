// The store backends. Construct them directly, or from a URL with open_store().
#pragma once

#include <memory>
#include <string>

#include "gloo_lite/base/socket.h"
#include "rendezvous/store.h"

namespace gloo_lite {

// In-process store for ranks that are threads of one process (tests, examples).
std::shared_ptr<Store> make_hash_store();

// A store in a shared directory (local or NFS-like): one file per key, created atomically by
// write-to-temporary + rename; waiting backs off instead of polling every 10 ms.
std::shared_ptr<Store> make_file_store(const std::string& directory);

// Client of a TcpStoreServer, connecting until `deadline`.
std::shared_ptr<Store> make_tcp_store(const std::string& host, uint16_t port,
                                      const Deadline& deadline);

// Redis over hiredis; InvalidArgument if gloo_lite was built without hiredis. `user` (with
// `password`) authenticates as a Redis 6 ACL user; empty: the default user. Keys written expire
// and a job's keys are deleted when its last handle closes (docs/stores.md, "Redis hygiene").
std::shared_ptr<Store> make_redis_store(const std::string& host, uint16_t port,
                                        const std::string& user, const std::string& password,
                                        int db, const Deadline& deadline);
std::shared_ptr<Store> make_redis_store(const std::string& host, uint16_t port,
                                        const std::string& password, int db,
                                        const Deadline& deadline);

// Scopes every key of `inner` under "prefix/".
std::shared_ptr<Store> make_prefix_store(std::shared_ptr<Store> inner, const std::string& prefix);

// The TCP store server: embeddable in any process (gloo_lite_run hosts one) and run standalone
// as the gloo_lite_store binary. Serves from its own thread until destroyed; survives malformed
// or oversized requests and abrupt disconnects (it drops that client and logs why).
class TcpStoreServer {
 public:
  // Listens on `bind` (port 0 picks a free port).
  explicit TcpStoreServer(const SocketAddress& bind);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const;
  // "tcp://host:port" for GLOO_LITE_STORE; a wildcard bind (0.0.0.0, ::) shows the host name.
  std::string url() const;
  // Requests executed so far (parked get/wait count once): lets tests and monitoring confirm
  // that waiting clients do not poll.
  uint64_t requests_handled() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gloo_lite
