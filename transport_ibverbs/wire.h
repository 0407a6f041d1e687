// The ibverbs message header: 40 bytes at the start of every SEND (eager payload follows).
// RDMA WRITE WITH IMMEDIATE carries no header: its 32-bit immediate is the receiver's recv id.
// Little-endian on every host; see docs/transport-ibverbs.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
// False when the marker, the type or the reserved bytes (2 and 3, always 0) are wrong.
bool decode(const uint8_t* in, Header* header);

// "eager", "clear-to-send", ...: the header types as messages name them.
const char* type_name(Type type);

// What is wrong with a received header, as the receiver reports it: the field, its value and
// the rule it breaks. `field` nullptr: nothing is wrong. Plain data, so that checking valid
// traffic builds no string.
struct Problem {
  const char* field = nullptr;
  uint64_t value = 0;
  const char* rule = "";
  explicit operator bool() const { return field != nullptr; }
};
// "clear-to-send header: recv id 0 (must be a non-zero 32-bit id)"
std::string describe(Type type, const Problem& problem);

// The checks a header allows without the receiver's state: every field as untrusted input.
// `received` is the byte length of the SEND that carried it, `slot_bytes` the size of one
// eager buffer (header included). Ids are the matching engine's 32-bit non-zero ids; fields a
// type does not use must be 0 (the encoder writes 0 there).
Problem check(const Header& header, size_t received, size_t slot_bytes);
// The credit field against the receiver's view of that peer: cumulative, so it never goes
// back from `last` (the highest seen), and never counts more of our messages than `sent` (all
// we ever posted into the peer's buffers). 32-bit wrapping counters.
Problem check_credits(uint32_t announced, uint32_t last, uint32_t sent);

}  // namespace gloo_lite::ibverbs::wire
