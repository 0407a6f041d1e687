// Runs a body on P connected contexts: as forked processes (file store in a temporary
// directory, one TCP device per process) or as threads of this process (hash store, one shared
// device).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "gloo_lite/context_engine.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {

using ContextBody = std::function<void(Context& context)>;

std::vector<ProcessResult> run_context_processes(
    int ranks, const ContextBody& body,
    std::chrono::milliseconds timeout = std::chrono::seconds(120), ContextOptions options = {});

void run_context_threads(int ranks, const ContextBody& body, ContextOptions options = {});

// A loopback TCP device, as every test uses.
std::shared_ptr<transport::Device> loopback_device();

// Deterministic test content: byte i of the message from `src` to `dst` with `salt`.
inline uint8_t pattern_byte(int src, int dst, size_t i, uint64_t salt) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t(src) << 40) ^ (uint64_t(dst) << 20) ^
               salt * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  return static_cast<uint8_t>(x);
}
std::vector<uint8_t> make_pattern(int src, int dst, size_t bytes, uint64_t salt);
// Index of the first byte that differs from the pattern, or -1.
long first_mismatch(const std::vector<uint8_t>& data, int src, int dst, uint64_t salt);

}  // namespace gloo_lite::test
