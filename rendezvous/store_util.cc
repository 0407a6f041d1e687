#include "rendezvous/store_util.h"

#include <cstdio>

#include "gloo_lite/base/error.h"

namespace gloo_lite::store_detail {

std::string quote_key(const std::string& key) {
  constexpr size_t kShown = 160;
  std::string out = "\"";
  for (size_t i = 0; i < key.size() && i < kShown; ++i) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    }
  }
  out += "\"";
  if (key.size() > kShown) out += "...(" + std::to_string(key.size()) + " bytes)";
  return out;
}

std::string quote_keys(const std::vector<std::string>& keys) {
  constexpr size_t kListed = 8;
  std::string out;
  for (size_t i = 0; i < keys.size() && i < kListed; ++i) {
    if (i > 0) out += ", ";
    out += quote_key(keys[i]);
  }
  if (keys.size() > kListed) out += " and " + std::to_string(keys.size() - kListed) + " more";
  return out;
}

void throw_key_timeout(const std::string& store, const std::vector<std::string>& missing,
                       Deadline::Clock::time_point started) {
  auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - started);
  std::string noun = missing.size() == 1 ? "key " : "keys ";
  throw TimeoutError(store + ": " + noun + quote_keys(missing) + " not set before the deadline" +
                     " (waited " + format_ms(waited) +
                     "); is the rank that sets it running, and using the same store and prefix?");
}

}  // namespace gloo_lite::store_detail
