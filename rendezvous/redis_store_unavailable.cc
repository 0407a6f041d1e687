// Built instead of redis_store.cc when hiredis was not found at configure time.
#include "gloo_lite/base/error.h"
#include "rendezvous/stores.h"

namespace gloo_lite {

std::shared_ptr<Store> make_redis_store(const std::string& host, uint16_t port,
                                        const std::string& password, int db,
                                        const Deadline& deadline) {
  return make_redis_store(host, port, "", password, db, deadline);
}

std::shared_ptr<Store> make_redis_store(const std::string& host, uint16_t port,
                                        const std::string& /*user*/,
                                        const std::string& /*password*/, int /*db*/,
                                        const Deadline& /*deadline*/) {
  throw InvalidArgument("redis://" + host + ":" + std::to_string(port) +
                        ": gloo_lite was built without hiredis, so it has no Redis store; "
                        "install libhiredis-dev and rebuild, or use a file:// or tcp:// store");
}

}  // namespace gloo_lite
