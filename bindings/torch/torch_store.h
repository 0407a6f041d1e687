// gloo_lite's Store interface over the store torch hands a backend (a c10d::Store, already
// scoped per process group by torch's PrefixStore): TCPStore under torchrun and env://,
// FileStore under file://, HashStore in tests. The backend meets its peers there, so it needs
// no port of its own.
//
// How the semantics map:
//  - reads: torch's get() waits with the store's own timeout, so a read bounded by a
//    gloo_lite deadline first waits for the key with what is left of that deadline, then gets;
//  - a wait of up to a second polls check(), a longer one is torch's wait (torch_store.cc);
//  - a wait that ends by the deadline is a TimeoutError naming the keys; any other failure of
//    the store (down, refused, broken) is a StoreError naming the store;
//  - writes, add and check cannot be bounded by the caller: torch's store bounds them with its
//    own timeout (init_process_group's), and a failure is a StoreError;
//  - erase is deleteKey; a store without it (torch raises "not implemented") erases nothing.
#pragma once

#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "rendezvous/store.h"

namespace gloo_lite::torch_backend {

class TorchStore : public Store {
 public:
  // `description`: what the store is, for messages ("TCPStore at 10.0.0.1:29500").
  TorchStore(c10::intrusive_ptr<::c10d::Store> store, std::string description);

  void set(const std::string& key, const Bytes& value, const Deadline& deadline) override;
  Bytes get(const std::string& key, const Deadline& deadline) override;
  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override;
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) override;
  bool check(const std::vector<std::string>& keys, const Deadline& deadline) override;
  bool erase(const std::string& key, const Deadline& deadline) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                               const Deadline& deadline) override;
  std::string describe() const override;

 private:
  // Runs one store operation, turning torch's exceptions into gloo_lite's.
  template <typename Operation>
  auto guarded(const char* what, const std::string& key, Operation&& operation);

  c10::intrusive_ptr<::c10d::Store> store_;
  std::string description_;
};

}  // namespace gloo_lite::torch_backend
