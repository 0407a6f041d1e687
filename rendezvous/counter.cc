#include "rendezvous/counter.h"

#include "gloo_lite/base/error.h"
#include "rendezvous/store_util.h"

namespace gloo_lite::store_detail {

namespace {

// Strict: optional '-', then digits, nothing else; like Redis, no spaces and no '+'.
bool parse_int64(const Bytes& text, int64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  size_t i = 0;
  bool negative = text[0] == '-';
  if (negative) i = 1;
  if (i == text.size()) return false;
  // Accumulate negatively so that INT64_MIN parses without overflow.
  int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    int digit = text[i] - '0';
    if (value < (INT64_MIN + digit) / 10) return false;
    value = value * 10 - digit;
  }
  if (!negative) {
    if (value == INT64_MIN) return false;
    value = -value;
  }
  *out = value;
  return true;
}

}  // namespace

int64_t add_to_counter(const Bytes* current, int64_t delta, const std::string& key,
                       const std::string& store) {
  int64_t value = 0;
  if (current != nullptr && !parse_int64(*current, &value)) {
    throw StoreError(store + ": add(" + quote_key(key) +
                     ") on a value that is not a decimal integer; counters and set() values "
                     "must use different keys");
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(value, delta, &sum)) {
    throw StoreError(store + ": add(" + quote_key(key) + ", " + std::to_string(delta) +
                     ") overflows the 64-bit counter (now " + std::to_string(value) + ")");
  }
  return sum;
}

Bytes format_counter(int64_t value) { return to_bytes(std::to_string(value)); }

}  // namespace gloo_lite::store_detail
