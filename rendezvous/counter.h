// Counters (Store::add) are kept as decimal text, the representation Redis INCRBY uses, so a
// counter reads the same through get() on every backend and interoperates with redis-cli.
#pragma once

#include <cstdint>
#include <string>

#include "rendezvous/store.h"

namespace gloo_lite::store_detail {

// Returns current + delta, where `current` is null for a key that does not exist yet (a
// counter starts at 0). StoreError, naming the key and store, when the value is not a decimal
// integer or the sum overflows int64.
int64_t add_to_counter(const Bytes* current, int64_t delta, const std::string& key,
                       const std::string& store);

Bytes format_counter(int64_t value);

}  // namespace gloo_lite::store_detail
