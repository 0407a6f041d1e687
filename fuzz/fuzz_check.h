// Helpers shared by the fuzz targets: an invariant check that aborts (libFuzzer then saves the
// input as a crash), and copies of the input into heap blocks of exactly the size a decoder may
// read, so that AddressSanitizer reports any read past it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#define FUZZ_CHECK(condition)                                                                  \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      std::fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace gloo_lite::fuzz {

// Consumes the input front to back; every take is bounds-checked.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), left_(size) {}
  size_t left() const { return left_; }
  // Null when fewer than `bytes` remain.
  const uint8_t* take(size_t bytes) {
    if (bytes > left_) return nullptr;
    const uint8_t* at = data_;
    data_ += bytes;
    left_ -= bytes;
    return at;
  }
  uint8_t byte() { return left_ > 0 ? *take(1) : 0; }
  uint64_t u64() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value = value << 8 | byte();
    return value;
  }

 private:
  const uint8_t* data_;
  size_t left_;
};

// A heap copy of exactly `bytes` bytes.
inline std::unique_ptr<uint8_t[]> exact_copy(const uint8_t* data, size_t bytes) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes]);
  if (bytes > 0) std::memcpy(copy.get(), data, bytes);
  return copy;
}

}  // namespace gloo_lite::fuzz
