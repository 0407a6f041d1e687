// The TCP transport's wire format (docs/wire-format.md explains it). All integers are
// little-endian and fixed width, whatever the host's byte order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gloo_lite::tcp::wire {

// Connection handshake, exchanged once per pair before any frame.
constexpr uint32_t kMagic = 0x544c4c47;  // "GLLT"
// 2: 48-byte frame headers that carry the call fingerprint and the error kind of an abort.
// 3: a rendezvous payload goes in data frames of bounded size (segments) that say where their
//    bytes go (`sent`), so that control frames can pass between two of them.
constexpr uint16_t kVersion = 3;
constexpr uint16_t kHello = 1;     // connector -> listener
constexpr uint16_t kHelloAck = 2;  // listener -> connector
constexpr size_t kHelloBytes = 40;
// Hello flag: the sender authenticates (docs/security.md). The connector's hello is then followed
// by its nonce; the listener's ack by its nonce and its proof; then the connector sends its proof.
constexpr uint32_t kHelloAuthenticated = 1;

struct Hello {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t kind = kHello;
  uint64_t context_id = 0;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  uint32_t size = 0;
  uint32_t flags = 0;  // kHelloAuthenticated
  uint64_t nonce = 0;
};

void encode_hello(const Hello& hello, uint8_t out[kHelloBytes]);
Hello decode_hello(const uint8_t in[kHelloBytes]);

// Frames after the handshake: a 48-byte header, optionally followed by `length` payload bytes.
// Each field has one meaning in every frame that uses it; frames leave the others 0.
enum class FrameType : uint8_t {
  kEager = 1,          // tag, length, fingerprint; payload follows
  kReadyToSend = 2,    // tag, length, fingerprint, send_id
  kClearToSend = 3,    // send_id, recv_id
  kData = 4,           // recv_id, length, sent; payload follows (one segment of the message)
  kSendCancelled = 5,  // recv_id: the sender cancelled after the receiver matched
  kMismatch = 6,       // tag, length = bytes the receiver posted, sent = bytes the sender sent
  kAbort = 7,          // error, origin, length of the reason text that follows
  kGoodbye = 8,        // clean close of the context
};
constexpr uint8_t kMaxFrameType = 8;
constexpr size_t kHeaderBytes = 48;

struct FrameHeader {
  FrameType type = FrameType::kEager;
  uint8_t error = 0;     // abort: the kind of error its peers raise (transport::ErrorKind)
  uint32_t send_id = 0;  // rendezvous: the sender's id for the message
  uint32_t recv_id = 0;  // rendezvous: the receiver's id for the receive it matched
  // abort: the rank where the failure began, plus one; 0: the sender itself (so a rank built
  // before this field, which sent 0 here, still reads right)
  uint32_t origin = 0;
  uint64_t tag = 0;          // matching tag
  uint64_t length = 0;       // message bytes (payload bytes where one follows)
  uint64_t fingerprint = 0;  // the sender's call (transport.h); 0: unchecked
  // Message bytes the sender sent: in a mismatch, all of them; in a data frame, those of the
  // data frames before this one (where this payload goes in the receive buffer).
  uint64_t sent = 0;
};

void encode_header(const FrameHeader& header, uint8_t out[kHeaderBytes]);
// Returns false for a header that is not ours (bad type or marker); the pair is then failed.
bool decode_header(const uint8_t in[kHeaderBytes], FrameHeader* header);

// Whether frames of this type carry `length` payload bytes.
inline bool has_payload(FrameType type) {
  return type == FrameType::kEager || type == FrameType::kData || type == FrameType::kAbort;
}

}  // namespace gloo_lite::tcp::wire
