#include "test/store/store_backends.h"

#include "rendezvous/stores.h"
#include "test/store/redis_server.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {

namespace {

const std::chrono::seconds kOpenTimeout(10);
const char kPrefix[] = "job7";

class HashBackend : public StoreBackend {
 public:
  std::shared_ptr<Store> open() override { return store_; }

 private:
  std::shared_ptr<Store> store_ = make_hash_store();
};

class UrlBackend : public StoreBackend {
 public:
  std::shared_ptr<Store> open() override { return open_store(url_, Deadline::after(kOpenTimeout)); }
  std::function<std::shared_ptr<Store>()> opener_for_child() override {
    std::string url = url_;
    return [url] { return open_store(url, Deadline::after(kOpenTimeout)); };
  }

 protected:
  std::string url_;
};

class FileBackend : public UrlBackend {
 public:
  FileBackend() { url_ = "file://" + dir_.path() + "/store"; }

 private:
  TempDir dir_;
};

class TcpBackend : public UrlBackend {
 public:
  TcpBackend() : server_(SocketAddress::resolve("127.0.0.1", 0)) { url_ = server_.url(); }

 private:
  TcpStoreServer server_;
};

class RedisBackend : public UrlBackend {
 public:
  // A non-zero database, so that the URL's /db reaches SELECT.
  RedisBackend() { url_ = server_.url(3); }

 private:
  RedisServer server_;
};

class PrefixBackend : public StoreBackend {
 public:
  explicit PrefixBackend(std::unique_ptr<StoreBackend> inner) : inner_(std::move(inner)) {}
  std::shared_ptr<Store> open() override { return make_prefix_store(inner_->open(), kPrefix); }
  std::function<std::shared_ptr<Store>()> opener_for_child() override {
    auto inner = inner_->opener_for_child();
    if (!inner) return nullptr;
    return [inner] { return make_prefix_store(inner(), kPrefix); };
  }

 private:
  std::unique_ptr<StoreBackend> inner_;
};

BackendKind kind(std::string name, std::string marker,
                 std::function<std::unique_ptr<StoreBackend>()> make) {
  return BackendKind{std::move(name), std::move(marker), std::move(make)};
}

}  // namespace

std::vector<BackendKind> all_backends() {
  std::vector<BackendKind> kinds = {
      kind("hash", "hash store", [] { return std::make_unique<HashBackend>(); })};
  for (const auto& k : url_backends()) kinds.push_back(k);
  kinds.push_back(kind("prefix_over_hash", "hash store", [] {
    return std::make_unique<PrefixBackend>(std::make_unique<HashBackend>());
  }));
  return kinds;
}

std::vector<BackendKind> url_backends() {
  return {
      kind("file", "file://", [] { return std::make_unique<FileBackend>(); }),
      kind("tcp", "tcp://127.0.0.1:", [] { return std::make_unique<TcpBackend>(); }),
      kind("redis", "redis://127.0.0.1:", [] { return std::make_unique<RedisBackend>(); }),
      kind("prefix_over_tcp", "tcp://127.0.0.1:",
           [] { return std::make_unique<PrefixBackend>(std::make_unique<TcpBackend>()); }),
  };
}

}  // namespace gloo_lite::test
