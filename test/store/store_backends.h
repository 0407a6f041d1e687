// The backends the conformance suite runs against. Each owns what it needs (a directory, a
// server thread, a redis-server process) for the length of one test.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/store.h"

namespace gloo_lite::test {

class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  // A client of the backend: a new connection for the networked ones, so that threads using
  // different clients exercise the server the way separate ranks do.
  virtual std::shared_ptr<Store> open() = 0;
  // How a forked process opens its own client, by URL; null for in-process backends.
  virtual std::function<std::shared_ptr<Store>()> opener_for_child() { return nullptr; }
};

struct BackendKind {
  std::string name;
  // Text every description and timeout message of this backend contains.
  std::string marker;
  std::function<std::unique_ptr<StoreBackend>()> make;
};

// hash, file, tcp, redis, prefix_over_hash, prefix_over_tcp.
std::vector<BackendKind> all_backends();
// The subset a forked process can reach by URL.
std::vector<BackendKind> url_backends();

// Keeps gtest from dumping the struct's bytes in failure messages.
inline void PrintTo(const BackendKind& kind, std::ostream* os) { *os << kind.name; }

struct BackendName {
  std::string operator()(const ::testing::TestParamInfo<BackendKind>& info) const {
    return info.param.name;
  }
};

}  // namespace gloo_lite::test
