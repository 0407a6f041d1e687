#include "rendezvous/tcp_store_protocol.h"

#include <cstdio>
#include <cstring>

#include "gloo_lite/base/socket.h"

namespace gloo_lite::tcp_store {

const char* op_name(Op op) {
  switch (op) {
    case Op::kSet:
      return "set";
    case Op::kGet:
      return "get";
    case Op::kWait:
      return "wait";
    case Op::kAdd:
      return "add";
    case Op::kCheck:
      return "check";
    case Op::kErase:
      return "erase";
  }
  if (op == kAuthHello) return "auth-hello";
  if (op == kAuthProof) return "auth-proof";
  return "?";
}

namespace {

std::string check_magic_and_version(const uint8_t* data) {
  uint32_t magic = get_u32(data);
  if (magic != kMagic) {
    char text[64];
    std::snprintf(text, sizeof(text), "bad magic 0x%08x", magic);
    return std::string(text) + " (not a gloo_lite store peer?)";
  }
  uint16_t version = get_u16(data + 4);
  if (version != kVersion) {
    return "protocol version " + std::to_string(version) + " but this end speaks version " +
           std::to_string(kVersion) + "; use the same gloo_lite release everywhere";
  }
  return "";
}

}  // namespace

std::string decode_request_header(const uint8_t* data, RequestHeader* out) {
  std::string problem = check_magic_and_version(data);
  if (!problem.empty()) return problem;
  uint16_t op = get_u16(data + 6);
  if (op < static_cast<uint16_t>(Op::kSet) || op > static_cast<uint16_t>(kAuthProof)) {
    return "unknown request type " + std::to_string(op);
  }
  out->op = static_cast<Op>(op);
  out->timeout_ms = get_u32(data + 8);
  out->body_bytes = get_u32(data + 12);
  if (out->body_bytes > kMaxRequestBodyBytes) {
    return "request body of " + std::to_string(out->body_bytes) + " bytes exceeds the limit of " +
           std::to_string(kMaxRequestBodyBytes);
  }
  return "";
}

std::string decode_response_header(const uint8_t* data, ResponseHeader* out) {
  std::string problem = check_magic_and_version(data);
  if (!problem.empty()) return problem;
  uint16_t status = get_u16(data + 6);
  if (status > static_cast<uint16_t>(Status::kError)) {
    return "unknown response status " + std::to_string(status);
  }
  out->status = static_cast<Status>(status);
  out->body_bytes = get_u32(data + 8);
  if (out->body_bytes > kMaxResponseBodyBytes) {
    return "response body of " + std::to_string(out->body_bytes) + " bytes exceeds the limit";
  }
  return "";
}

MessageBuilder::MessageBuilder(size_t header_bytes, size_t items)
    : header_bytes_(header_bytes), buffer_(header_bytes + 4) {
  put_u32(buffer_.data() + header_bytes, static_cast<uint32_t>(items));
}

void MessageBuilder::add(const void* data, size_t bytes) {
  size_t at = buffer_.size();
  buffer_.resize(at + 4 + bytes);
  put_u32(buffer_.data() + at, static_cast<uint32_t>(bytes));
  if (bytes > 0) std::memcpy(buffer_.data() + at + 4, data, bytes);
}

void MessageBuilder::add_i64(int64_t value) {
  uint8_t encoded[8];
  put_u64(encoded, static_cast<uint64_t>(value));
  add(encoded, sizeof(encoded));
}

Bytes MessageBuilder::finish_request(Op op, uint32_t timeout_ms) {
  uint8_t* h = buffer_.data();
  put_u32(h, kMagic);
  put_u16(h + 4, kVersion);
  put_u16(h + 6, static_cast<uint16_t>(op));
  put_u32(h + 8, timeout_ms);
  put_u32(h + 12, static_cast<uint32_t>(body_bytes()));
  return std::move(buffer_);
}

Bytes MessageBuilder::finish_response(Status status) {
  uint8_t* h = buffer_.data();
  put_u32(h, kMagic);
  put_u16(h + 4, kVersion);
  put_u16(h + 6, static_cast<uint16_t>(status));
  put_u32(h + 8, static_cast<uint32_t>(body_bytes()));
  return std::move(buffer_);
}

bool Item::to_i64(int64_t* out) const {
  if (size != 8) return false;
  *out = static_cast<int64_t>(get_u64(data));
  return true;
}

std::string parse_items(const Bytes& body, std::vector<Item>* items) {
  items->clear();
  if (body.size() < 4) return "body shorter than its item count";
  uint32_t count = get_u32(body.data());
  if (count > kMaxItems) return "item count " + std::to_string(count) + " exceeds the limit";
  size_t at = 4;
  items->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (body.size() - at < 4) return "body truncated in item " + std::to_string(i);
    uint32_t length = get_u32(body.data() + at);
    at += 4;
    if (body.size() - at < length) return "item " + std::to_string(i) + " overruns the body";
    items->push_back(Item{body.data() + at, length});
    at += length;
  }
  if (at != body.size()) return "trailing bytes after the last item";
  return "";
}

Bytes error_response(const std::string& message) {
  MessageBuilder builder(kResponseHeaderBytes, 1);
  builder.add(message);
  return builder.finish_response(Status::kError);
}

}  // namespace gloo_lite::tcp_store
