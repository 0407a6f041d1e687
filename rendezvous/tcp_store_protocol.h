// Wire format of the TCP store. Every integer is little-endian (base/socket.h codecs); every
// length is checked against the limits below before anything is allocated for it.
//
// Request:  magic u32 | version u16 | op u16 | timeout_ms u32 | body_bytes u32 | body
// Response: magic u32 | version u16 | status u16 | body_bytes u32 | body
// Body:     count u32, then count items of (length u32 | bytes)
//
// Items per op (request -> OK response):
//   SET   key, value            -> (none)
//   GET   key...                -> value...        parks until all exist or timeout_ms passes
//   WAIT  key...                -> (none)          parks likewise
//   ADD   key, delta (i64)      -> sum (i64)
//   CHECK key...                -> one byte 0/1
//   ERASE key                   -> one byte 0/1 (whether it existed)
// A TIMEOUT response lists the keys still missing; an ERROR response carries a message.
//
// Authentication (docs/security.md): a server with a secret answers nothing on a connection
// before these two requests succeed, a challenge-response over fresh nonces (base/auth.h):
//   AUTH-HELLO client nonce  -> server nonce, server proof   (the client checks the proof)
//   AUTH-PROOF client proof  -> (none)                       (else ERROR, and the server drops it)
// The version travels in every header, so a server can reject a client of another release
// at its first request, with a message, instead of misreading it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rendezvous/store.h"

namespace gloo_lite::tcp_store {

constexpr uint32_t kMagic = 0x54534C47;  // the bytes "GLST"
constexpr uint16_t kVersion = 1;
constexpr size_t kRequestHeaderBytes = 16;
constexpr size_t kResponseHeaderBytes = 12;
constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxValueBytes = size_t{64} << 20;
constexpr size_t kMaxItems = 65536;
constexpr size_t kMaxRequestBodyBytes = kMaxValueBytes + 64 * 1024;
// multi_get answers can carry many values; beyond this the server refuses, naming the limit.
constexpr size_t kMaxResponseBodyBytes = size_t{1} << 30;
// timeout_ms value meaning "no deadline".
constexpr uint32_t kNoTimeout = 0xFFFFFFFF;

enum class Op : uint16_t { kSet = 1, kGet = 2, kWait = 3, kAdd = 4, kCheck = 5, kErase = 6 };
enum class Status : uint16_t { kOk = 0, kTimeout = 1, kError = 2 };

// Not enumerators of Op: the server answers them itself and they never reach the Service, so
// the switches over the store's operations need not list them.
constexpr Op kAuthHello = static_cast<Op>(7);
constexpr Op kAuthProof = static_cast<Op>(8);
inline bool is_auth(Op op) { return op == kAuthHello || op == kAuthProof; }
// Bounds an authentication request before anything is known of its sender.
constexpr size_t kMaxAuthBodyBytes = 256;
// Separates the store's proofs from the transport's (auth::Transcript::purpose).
constexpr const char* kAuthPurpose = "gloo_lite tcp store client";

const char* op_name(Op op);

struct RequestHeader {
  Op op = Op::kSet;
  uint32_t timeout_ms = 0;
  uint32_t body_bytes = 0;
};

struct ResponseHeader {
  Status status = Status::kOk;
  uint32_t body_bytes = 0;
};

// Both return "" when the header is acceptable, else why not.
std::string decode_request_header(const uint8_t* data, RequestHeader* out);
std::string decode_response_header(const uint8_t* data, ResponseHeader* out);

// Builds a message in one buffer (header space first) so it leaves in a single write.
class MessageBuilder {
 public:
  MessageBuilder(size_t header_bytes, size_t items);
  void add(const void* data, size_t bytes);
  void add(const std::string& text) { add(text.data(), text.size()); }
  void add(const Bytes& bytes) { add(bytes.data(), bytes.size()); }
  void add_i64(int64_t value);
  size_t body_bytes() const { return buffer_.size() - header_bytes_; }
  Bytes finish_request(Op op, uint32_t timeout_ms);
  Bytes finish_response(Status status);

 private:
  size_t header_bytes_;
  Bytes buffer_;
};

// A view of one item inside a received body.
struct Item {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string str() const { return std::string(reinterpret_cast<const char*>(data), size); }
  Bytes bytes() const { return Bytes(data, data + size); }
  bool to_i64(int64_t* out) const;
};

// Splits a body into items; returns "" or why it is malformed (counts and lengths must add up
// exactly to the body size).
std::string parse_items(const Bytes& body, std::vector<Item>* items);

// Responses that carry a single message or key list.
Bytes error_response(const std::string& message);

}  // namespace gloo_lite::tcp_store
