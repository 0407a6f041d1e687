#include "test/collectives/guarded_buffer.h"

namespace gloo_lite::test {
namespace {

uint8_t filler_byte(size_t k) { return static_cast<uint8_t>(0xCD ^ (k % 251)); }
uint8_t guard_byte(size_t k) { return static_cast<uint8_t>(0xA5 ^ (k * 7)); }

}  // namespace

void fill_filler(void* out, size_t bytes) {
  auto* data = static_cast<uint8_t*>(out);
  for (size_t k = 0; k < bytes; ++k) data[k] = filler_byte(k);
}

void check_filler(const void* got, size_t bytes, const std::string& what, Problems& problems) {
  const auto* data = static_cast<const uint8_t*>(got);
  for (size_t k = 0; k < bytes; ++k) {
    if (data[k] != filler_byte(k)) {
      problems.push_back(what + ": byte " + std::to_string(k) + " of " + std::to_string(bytes) +
                         " was overwritten (it should be untouched)");
      return;
    }
  }
}

GuardedBuffer::GuardedBuffer(size_t bytes) : storage_(bytes + 2 * kGuardBytes), bytes_(bytes) {
  for (size_t k = 0; k < kGuardBytes; ++k) {
    storage_[k] = guard_byte(k);
    storage_[kGuardBytes + bytes + k] = guard_byte(k + kGuardBytes);
  }
}

std::string GuardedBuffer::damaged_guard() const {
  for (size_t k = 0; k < kGuardBytes; ++k) {
    if (storage_[k] != guard_byte(k)) {
      return "guard byte " + std::to_string(kGuardBytes - k) + " before the buffer overwritten";
    }
    if (storage_[kGuardBytes + bytes_ + k] != guard_byte(k + kGuardBytes)) {
      return "guard byte " + std::to_string(k) + " after the " + std::to_string(bytes_) +
             "-byte buffer overwritten";
    }
  }
  return "";
}

}  // namespace gloo_lite::test
