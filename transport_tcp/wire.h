// The TCP transport's wire format (docs/wire-format.md explains it). All integers are
// little-endian and fixed width, whatever the host's byte order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gloo_lite::tcp::wire {

// Connection handshake, exchanged once per pair before any frame.
constexpr uint32_t kMagic = 0x544c4c47;  // "GLLT"
constexpr uint16_t kVersion = 1;
constexpr uint16_t kHello = 1;     // connector -> listener
constexpr uint16_t kHelloAck = 2;  // listener -> connector
constexpr size_t kHelloBytes = 40;

struct Hello {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t kind = kHello;
  uint64_t context_id = 0;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  uint32_t size = 0;
  uint32_t reserved = 0;
  uint64_t nonce = 0;
};

void encode_hello(const Hello& hello, uint8_t out[kHelloBytes]);
Hello decode_hello(const uint8_t in[kHelloBytes]);

// Frames after the handshake: a 32-byte header, optionally followed by `length` payload bytes.
enum class FrameType : uint8_t {
  kEager = 1,          // a = tag, b = length; payload follows
  kReadyToSend = 2,    // a = tag, b = length, c = sender's send id
  kClearToSend = 3,    // a = send id, c = receiver's recv id
  kData = 4,           // a = recv id, b = length; payload follows
  kSendCancelled = 5,  // a = recv id: the sender cancelled after the receiver matched
  kMismatch = 6,       // a = tag, b = bytes the receiver posted, c = bytes the sender sent
  kAbort = 7,          // b = length of the reason text that follows
  kGoodbye = 8,        // clean close of the context
};
constexpr uint8_t kMaxFrameType = 8;
constexpr size_t kHeaderBytes = 32;

struct FrameHeader {
  FrameType type = FrameType::kEager;
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t c = 0;
};

void encode_header(const FrameHeader& header, uint8_t out[kHeaderBytes]);
// Returns false for a header that is not ours (bad type or marker); the pair is then failed.
bool decode_header(const uint8_t in[kHeaderBytes], FrameHeader* header);

// Whether frames of this type carry `b` payload bytes.
inline bool has_payload(FrameType type) {
  return type == FrameType::kEager || type == FrameType::kData || type == FrameType::kAbort;
}

}  // namespace gloo_lite::tcp::wire
