#include "rendezvous/store.h"

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "rendezvous/store_url.h"
#include "rendezvous/stores.h"

namespace gloo_lite {

std::vector<Bytes> Store::multi_get(const std::vector<std::string>& keys,
                                    const Deadline& deadline) {
  std::vector<Bytes> values;
  values.reserve(keys.size());
  for (const auto& key : keys) values.push_back(get(key, deadline));
  return values;
}

Deadline Store::default_deadline() { return Deadline::after(knob_ms("GLOO_LITE_TIMEOUT_MS")); }

std::shared_ptr<Store> open_store(const std::string& url, const Deadline& deadline) {
  StoreUrl parsed = parse_store_url(url);
  if (parsed.scheme == "file") return make_file_store(parsed.path);
  if (parsed.scheme == "tcp") return make_tcp_store(parsed.host, parsed.port, deadline);
  return make_redis_store(parsed.host, parsed.port, parsed.user, parsed.password, parsed.db,
                          deadline);
}

}  // namespace gloo_lite
