#include "bindings/torch/torch_store.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "bindings/torch/torch_errors.h"
#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite::torch_backend {
namespace {

// Waits this short poll the store (TorchStore::wait).
constexpr std::chrono::milliseconds kPolledWait{1000};

std::string join(const std::vector<std::string>& keys) {
  std::string joined;
  for (const std::string& key : keys) joined += (joined.empty() ? "" : ", ") + key;
  return joined;
}

}  // namespace

TorchStore::TorchStore(c10::intrusive_ptr<::c10d::Store> store, std::string description)
    : store_(std::move(store)), description_(std::move(description)) {}

std::string TorchStore::describe() const { return description_; }

template <typename Operation>
auto TorchStore::guarded(const char* what, const std::string& key, Operation&& operation) {
  try {
    return operation();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw StoreError(std::string(what) + " of '" + key + "' on torch's store " + description_ +
                     " failed: " + message_of(e) +
                     " (check that the store's host, rank 0 under torchrun, is alive and "
                     "reachable)");
  }
}

void TorchStore::wait(const std::vector<std::string>& keys, const Deadline& deadline) {
  if (keys.empty()) return;
  // A never-ending deadline waits as long as torch's store lets it.
  auto budget = deadline.is_never() ? store_->getTimeout() : deadline.remaining();
  // torch's "no timeout" (0) on a never-ending deadline: a day, in steps torch can express.
  if (deadline.is_never() && budget <= std::chrono::milliseconds(0)) {
    budget = std::chrono::hours(24);
  }
  if (!deadline.is_never() && budget <= kPolledWait) {
    // A short wait polls check() instead of torch's wait: one of those that times out costs a
    // cancel round trip and two warnings in torch's log, whose formatting of the socket's
    // address may look its name up (seconds where lookups time out). gloo_lite waits in
    // slices of 50 ms (the shared-memory setup, host_segment.cc): a rank whose last slice
    // took 1-5 s more raised that late and wrote its hang report too late for its peers,
    // which named it as never arrived.
    Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(10));
    for (;;) {
      if (check(keys, deadline)) return;
      if (!backoff.sleep(deadline)) {
        throw TimeoutError("key(s) " + join(keys) + " did not appear in torch's store " +
                           description_ + " before the deadline (" +
                           std::to_string(budget.count()) +
                           " ms): a rank has not reached this point");
      }
    }
  }
  try {
    store_->wait(keys, std::max(budget, std::chrono::milliseconds(1)));
  } catch (const std::exception& e) {
    // torch reports a wait that ran out exactly like a broken store (DistStoreError); the
    // clock tells them apart.
    if (!deadline.is_never() && deadline.expired()) {
      throw TimeoutError("key(s) " + join(keys) + " did not appear in torch's store " +
                         description_ + " within the deadline (" + std::to_string(budget.count()) +
                         " ms): a rank has not reached this " +
                         "point (torch said: " + message_of(e) + ")");
    }
    throw StoreError("waiting for key(s) " + join(keys) + " on torch's store " + description_ +
                     " failed: " + message_of(e) +
                     " (check that the store's host, rank 0 under torchrun, is alive)");
  }
}

void TorchStore::set(const std::string& key, const Bytes& value, const Deadline&) {
  guarded("set", key, [&] {
    store_->set(key, value);
    return 0;
  });
}

Bytes TorchStore::get(const std::string& key, const Deadline& deadline) {
  wait({key}, deadline);
  return guarded("get", key, [&] { return store_->get(key); });
}

std::vector<Bytes> TorchStore::multi_get(const std::vector<std::string>& keys,
                                         const Deadline& deadline) {
  wait(keys, deadline);
  return guarded("multi_get", keys.empty() ? std::string() : keys.front(),
                 [&] { return store_->multiGet(keys); });
}

int64_t TorchStore::add(const std::string& key, int64_t delta, const Deadline&) {
  return guarded("add", key, [&] { return store_->add(key, delta); });
}

bool TorchStore::check(const std::vector<std::string>& keys, const Deadline&) {
  return guarded("check", keys.empty() ? std::string() : keys.front(),
                 [&] { return store_->check(keys); });
}

bool TorchStore::erase(const std::string& key, const Deadline&) {
  try {
    return store_->deleteKey(key);
  } catch (const c10::NotImplementedError&) {
    return false;  // keys are scoped per context, so a key left behind confuses nobody
  } catch (const std::exception& e) {
    throw StoreError("deleting '" + key + "' on torch's store " + description_ +
                     " failed: " + message_of(e));
  }
}

}  // namespace gloo_lite::torch_backend
