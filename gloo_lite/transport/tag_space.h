// The layout of transport tags, in one place. Every message a context sends carries a 64-bit
// tag, and receives match messages per (peer, tag). Point-to-point calls and collectives live
// in disjoint halves, so that no user tag can ever match a collective's message:
//
//   bit 63     1: point-to-point. Bits 62..0 are the user's tag (Context::send/recv/isend/...,
//              0 <= tag < 2^63).
//              0: a collective call. Bits 62..47 are its stream (CollectiveOptions::tag),
//              bit 46 marks the call check's own traffic (the fingerprint exchange of
//              GLOO_LITE_CHECK, gloo_lite/fingerprint.h), bits 45..0 the call's sequence
//              number on its stream (0, 1, 2, ...; 2^46 calls before it wraps).
#pragma once

#include <cstdint>
#include <string>

namespace gloo_lite::tags {

constexpr uint64_t kPointToPointBit = uint64_t{1} << 63;
constexpr int kStreamShift = 47;
constexpr uint64_t kCheckBit = uint64_t{1} << 46;
constexpr uint64_t kSequenceMask = kCheckBit - 1;
// The largest user tag of point-to-point calls.
constexpr uint64_t kMaxUserTag = kPointToPointBit - 1;
// A user tag above every tag a binding's callers can name where those are narrower than 62 bits
// (torch's send/recv tags are C ints): the binding's own point-to-point exchanges (the torch
// backend's gather, scatter and all_to_all on CUDA tensors) use it and never meet a caller's.
constexpr uint64_t kBindingTag = uint64_t{1} << 62;
static_assert(kBindingTag <= kMaxUserTag, "the binding tag is a point-to-point user tag");

constexpr uint64_t collective(uint16_t stream, uint64_t sequence) {
  return (uint64_t{stream} << kStreamShift) | (sequence & kSequenceMask);
}
constexpr uint64_t point_to_point(uint64_t user_tag) { return kPointToPointBit | user_tag; }

constexpr bool is_point_to_point(uint64_t tag) { return (tag & kPointToPointBit) != 0; }
constexpr uint16_t stream_of(uint64_t tag) {
  return static_cast<uint16_t>((tag & ~kPointToPointBit) >> kStreamShift);
}
constexpr uint64_t sequence_of(uint64_t tag) { return tag & kSequenceMask; }
constexpr uint64_t user_tag_of(uint64_t tag) { return tag & ~kPointToPointBit; }

// "point-to-point tag 5", "collective #12 on tag 0", "call check of collective #12 on tag 0".
inline std::string describe(uint64_t tag) {
  if (is_point_to_point(tag)) return "point-to-point tag " + std::to_string(user_tag_of(tag));
  std::string text = "collective #" + std::to_string(sequence_of(tag)) + " on tag " +
                     std::to_string(stream_of(tag));
  return (tag & kCheckBit) != 0 ? "call check of " + text : text;
}

}  // namespace gloo_lite::tags
