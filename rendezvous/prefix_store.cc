// Scopes keys under "prefix/" so that jobs, and the sub-contexts of one job, can share a store
// without their keys colliding. Errors from the inner store name the full (prefixed) key, which
// is what an operator finds when inspecting the store.
#include "gloo_lite/base/error.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

class PrefixStore final : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> inner, std::string prefix)
      : inner_(std::move(inner)), prefix_(std::move(prefix) + "/") {}

  void set(const std::string& key, const Bytes& value, const Deadline& deadline) override {
    inner_->set(scoped(key), value, deadline);
  }
  Bytes get(const std::string& key, const Deadline& deadline) override {
    return inner_->get(scoped(key), deadline);
  }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                               const Deadline& deadline) override {
    return inner_->multi_get(scoped(keys), deadline);
  }
  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override {
    inner_->wait(scoped(keys), deadline);
  }
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) override {
    return inner_->add(scoped(key), delta, deadline);
  }
  bool check(const std::vector<std::string>& keys, const Deadline& deadline) override {
    return inner_->check(scoped(keys), deadline);
  }
  bool erase(const std::string& key, const Deadline& deadline) override {
    return inner_->erase(scoped(key), deadline);
  }
  std::string describe() const override {
    return inner_->describe() + " (prefix \"" + prefix_ + "\")";
  }

 private:
  std::string scoped(const std::string& key) const { return prefix_ + key; }
  std::vector<std::string> scoped(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& key : keys) out.push_back(scoped(key));
    return out;
  }

  std::shared_ptr<Store> inner_;
  std::string prefix_;
};

}  // namespace

std::shared_ptr<Store> make_prefix_store(std::shared_ptr<Store> inner, const std::string& prefix) {
  if (!inner) throw InvalidArgument("make_prefix_store: inner store is null");
  if (prefix.empty()) throw InvalidArgument("make_prefix_store: empty prefix");
  return std::make_shared<PrefixStore>(std::move(inner), prefix);
}

}  // namespace gloo_lite
