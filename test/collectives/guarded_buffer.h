// Buffers that catch writes where none belong: guard zones around a heap buffer, and a filler
// pattern for buffers the library must leave untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gloo_lite::test {

using Problems = std::vector<std::string>;

// A heap buffer with guard zones before and after it, to catch writes outside a region.
class GuardedBuffer {
 public:
  static constexpr size_t kGuardBytes = 64;
  explicit GuardedBuffer(size_t bytes);
  uint8_t* data() { return storage_.data() + kGuardBytes; }
  const uint8_t* data() const { return storage_.data() + kGuardBytes; }
  size_t bytes() const { return bytes_; }
  // Empty when both guard zones still hold their pattern, else where the damage starts.
  std::string damaged_guard() const;

 private:
  std::vector<uint8_t> storage_;
  size_t bytes_;
};

// Fills with a recognisable filler that no input pattern is likely to reproduce.
void fill_filler(void* out, size_t bytes);
// Checks that `got` still holds `bytes` of filler.
void check_filler(const void* got, size_t bytes, const std::string& what, Problems& problems);

}  // namespace gloo_lite::test
