// The ibverbs message header: 40 bytes at the start of every SEND (eager payload follows).
// RDMA WRITE WITH IMMEDIATE carries no header: its 32-bit immediate is the receiver's recv id.
// Little-endian on every host; see docs/transport-ibverbs.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gloo_lite::ibverbs::wire {

constexpr size_t kHeaderBytes = 40;
constexpr uint8_t kMarker = 0xB5;

enum class Type : uint8_t {
  kEager = 1,             // a = tag, b = length, fingerprint; payload follows
  kReadyToSend = 2,       // a = tag, b = length, c = send id, fingerprint
  kClearToSend = 3,       // a = send id, b = remote address, c = recv id | rkey << 32
  kSendCancelled = 4,     // a = recv id
  kMismatch = 5,          // a = tag, b = bytes posted, c = bytes sent
  kCredit = 6,            // nothing but the credit field; does not use a credit itself
  kHello = 7,             // a = context id, b = src rank | dst rank << 32, c = size
  kCancelReceive = 8,     // a = recv id: that receive is cancelled, write nothing more into it
  kReceiveCancelled = 9,  // a = recv id: the answer, sent after every write into it
};

struct Header {
  Type type = Type::kEager;
  uint32_t credits = 0;  // receive buffers the sender of this header has reposted, cumulative
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t c = 0;
  uint64_t fingerprint = 0;  // eager, ready-to-send: the sender's call (transport.h); 0 unchecked
};

void encode(const Header& header, uint8_t* out);
// False when the marker or the type is wrong.
bool decode(const uint8_t* in, Header* header);

}  // namespace gloo_lite::ibverbs::wire
