// The in-process store: ranks are threads sharing one map. Waiters sleep on a condition
// variable that every write signals, so a get() costs no polling at all.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "rendezvous/counter.h"
#include "rendezvous/store_util.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

class HashStore final : public Store {
 public:
  HashStore() {
    char name[48];
    std::snprintf(name, sizeof(name), "hash store %p", static_cast<const void*>(this));
    name_ = name;
  }

  // Operations on the in-process map never wait for another process, so only get/wait/multi_get
  // have a deadline to honour.
  void set(const std::string& key, const Bytes& value, const Deadline& /*deadline*/) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
  }

  Bytes get(const std::string& key, const Deadline& deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_locked(lock, {key}, deadline);
    return values_.at(key);
  }

  std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                               const Deadline& deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_locked(lock, keys, deadline);
    std::vector<Bytes> out;
    out.reserve(keys.size());
    for (const auto& key : keys) out.push_back(values_.at(key));
    return out;
  }

  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_locked(lock, keys, deadline);
  }

  int64_t add(const std::string& key, int64_t delta, const Deadline& /*deadline*/) override {
    int64_t sum = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = values_.find(key);
      sum = store_detail::add_to_counter(it == values_.end() ? nullptr : &it->second, delta, key,
                                         name_);
      values_[key] = store_detail::format_counter(sum);
    }
    changed_.notify_all();
    return sum;
  }

  bool check(const std::vector<std::string>& keys, const Deadline& /*deadline*/) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return missing_locked(keys).empty();
  }

  bool erase(const std::string& key, const Deadline& /*deadline*/) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return values_.erase(key) > 0;
  }

  std::string describe() const override { return name_; }

 private:
  std::vector<std::string> missing_locked(const std::vector<std::string>& keys) const {
    std::vector<std::string> missing;
    for (const auto& key : keys) {
      if (values_.count(key) == 0) missing.push_back(key);
    }
    return missing;
  }

  void wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                   const Deadline& deadline) {
    auto started = Deadline::Clock::now();
    auto present = [&] { return missing_locked(keys).empty(); };
    // wait_until(time_point::max()) overflows inside some standard libraries.
    if (deadline.is_never()) {
      changed_.wait(lock, present);
      return;
    }
    if (!changed_.wait_until(lock, deadline.time_point(), present)) {
      store_detail::throw_key_timeout(name_, missing_locked(keys), started);
    }
  }

  std::string name_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::string, Bytes> values_;
};

}  // namespace

std::shared_ptr<Store> make_hash_store() { return std::make_shared<HashStore>(); }

}  // namespace gloo_lite
