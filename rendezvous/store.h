// The rendezvous store: how ranks find each other. A small key-value interface with blocking
// reads bounded by a deadline. Backends: in-process hash (threads as ranks), file (shared
// directory), TCP (our server), Redis; PrefixStore scopes keys so that jobs and sub-contexts can
// share one store. Every backend may be shared by threads; see docs/stores.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite {

using Bytes = std::vector<uint8_t>;

// Deadlines: every operation returns or throws by its deadline (a little slack aside, see
// docs/stores.md). The forms without a deadline use GLOO_LITE_TIMEOUT_MS from now.
// Errors: a key that does not appear in time on a store that answers is a TimeoutError naming the
// key; a store that does not answer (down, stopped, unreachable, silent) is a StoreError naming
// the store and what to check, whichever the backend.
class Store {
 public:
  virtual ~Store() = default;

  // Creates or overwrites `key`.
  virtual void set(const std::string& key, const Bytes& value, const Deadline& deadline) = 0;
  // Returns the value of `key`, waiting until it exists; TimeoutError (naming the key and the
  // store) when the deadline passes first.
  virtual Bytes get(const std::string& key, const Deadline& deadline) = 0;
  // Waits until every key exists; TimeoutError naming the missing keys.
  virtual void wait(const std::vector<std::string>& keys, const Deadline& deadline) = 0;
  // Atomically adds `delta` to the integer counter `key` (created at 0) and returns the result.
  // Counters are stored as decimal text, so get() of a counter returns e.g. "3".
  virtual int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) = 0;
  // True when every key exists now; never waits for keys.
  virtual bool check(const std::vector<std::string>& keys, const Deadline& deadline) = 0;
  // Removes `key`; returns whether it existed.
  virtual bool erase(const std::string& key, const Deadline& deadline) = 0;
  // Where this store lives, for error messages ("tcp://10.0.0.1:29500").
  virtual std::string describe() const = 0;

  // Gets several keys; backends that can fetch them in one round trip override this.
  virtual std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                                       const Deadline& deadline);

  // The same operations bounded by the default deadline (GLOO_LITE_TIMEOUT_MS from now).
  void set(const std::string& key, const Bytes& value) { set(key, value, default_deadline()); }
  int64_t add(const std::string& key, int64_t delta) { return add(key, delta, default_deadline()); }
  bool check(const std::vector<std::string>& keys) { return check(keys, default_deadline()); }
  bool erase(const std::string& key) { return erase(key, default_deadline()); }

  static Deadline default_deadline();
};

// Helpers for text values.
inline Bytes to_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }
inline std::string to_string(const Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }

// Opens a store from a URL: file:///dir, tcp://host:port,
// redis://[[user]:password@]host:port[/db] (rendezvous/store_url.h).
// Throws InvalidArgument for an unknown scheme or malformed URL, StoreError when unreachable.
std::shared_ptr<Store> open_store(const std::string& url, const Deadline& deadline);

}  // namespace gloo_lite
