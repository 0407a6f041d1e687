#include "transport_ibverbs/wire.h"

namespace gloo_lite::ibverbs::wire {
namespace {

void put(uint8_t* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t get(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{in[i]} << (8 * i);
  return value;
}

constexpr const char* kIdRule = "must be a non-zero 32-bit id";
constexpr const char* kUnusedRule = "must be 0 in this header type";

bool valid_id(uint64_t id) { return id != 0 && id <= UINT32_MAX; }

// The first of the fields named in `unused` that is not 0.
Problem nonzero(const Header& h, bool a, bool b, bool c, bool fingerprint) {
  if (a && h.a != 0) return {"field a", h.a, kUnusedRule};
  if (b && h.b != 0) return {"field b", h.b, kUnusedRule};
  if (c && h.c != 0) return {"field c", h.c, kUnusedRule};
  if (fingerprint && h.fingerprint != 0) return {"fingerprint", h.fingerprint, kUnusedRule};
  return {};
}

}  // namespace

void encode(const Header& header, uint8_t* out) {
  out[0] = static_cast<uint8_t>(header.type);
  out[1] = kMarker;
  put(out + 2, 0, 2);
  put(out + 4, header.credits, 4);
  put(out + 8, header.a, 8);
  put(out + 16, header.b, 8);
  put(out + 24, header.c, 8);
  put(out + 32, header.fingerprint, 8);
}

bool decode(const uint8_t* in, Header* header) {
  if (in[1] != kMarker || in[0] < 1 || in[0] > 9 || in[2] != 0 || in[3] != 0) return false;
  header->type = static_cast<Type>(in[0]);
  header->credits = static_cast<uint32_t>(get(in + 4, 4));
  header->a = get(in + 8, 8);
  header->b = get(in + 16, 8);
  header->c = get(in + 24, 8);
  header->fingerprint = get(in + 32, 8);
  return true;
}

const char* type_name(Type type) {
  switch (type) {
    case Type::kEager:
      return "eager";
    case Type::kReadyToSend:
      return "ready-to-send";
    case Type::kClearToSend:
      return "clear-to-send";
    case Type::kSendCancelled:
      return "send-cancelled";
    case Type::kMismatch:
      return "mismatch";
    case Type::kCredit:
      return "credit";
    case Type::kHello:
      return "hello";
    case Type::kCancelReceive:
      return "cancel-receive";
    case Type::kReceiveCancelled:
      return "receive-cancelled";
  }
  return "unknown";
}

std::string describe(Type type, const Problem& problem) {
  return std::string(type_name(type)) + " header: " + problem.field + " " +
         std::to_string(problem.value) + " (" + problem.rule + ")";
}

Problem check(const Header& h, size_t received, size_t slot_bytes) {
  const size_t payload_room = slot_bytes > kHeaderBytes ? slot_bytes - kHeaderBytes : 0;
  if (h.type == Type::kEager) {
    // The length decides how many bytes are copied out of the buffer: it must be what came.
    if (h.b > payload_room) {
      return {"length", h.b,
              "exceeds the eager buffer (GLOO_LITE_IB_BUFFER_BYTES must be the same on every "
              "rank)"};
    }
    if (received != kHeaderBytes + h.b) {
      return {"length", h.b, "differs from the payload the message carried"};
    }
    return nonzero(h, false, false, true, false);
  }
  if (received != kHeaderBytes) return {"message size", received, "must be the header alone"};
  switch (h.type) {
    case Type::kEager:
      break;
    case Type::kReadyToSend:
      if (!valid_id(h.c)) return {"send id", h.c, kIdRule};
      return {};
    case Type::kClearToSend:
      if (!valid_id(h.a)) return {"send id", h.a, kIdRule};
      if (!valid_id(h.c & UINT32_MAX)) return {"recv id", h.c & UINT32_MAX, kIdRule};
      return nonzero(h, false, false, false, true);
    case Type::kMismatch:
      if (h.b == h.c) return {"bytes sent", h.c, "must differ from the bytes posted"};
      return nonzero(h, false, false, false, true);
    case Type::kCredit:
      return nonzero(h, true, true, true, true);
    case Type::kHello:
      return nonzero(h, false, false, false, true);
    case Type::kSendCancelled:
    case Type::kCancelReceive:
    case Type::kReceiveCancelled:
      if (!valid_id(h.a)) return {"recv id", h.a, kIdRule};
      return nonzero(h, false, true, true, true);
  }
  return {};
}

Problem check_credits(uint32_t announced, uint32_t last, uint32_t sent) {
  if (static_cast<int32_t>(announced - last) < 0) {
    return {"credits", announced, "went back (credits are cumulative)"};
  }
  if (static_cast<int32_t>(sent - announced) < 0) {
    return {"credits", announced, "count more messages than this rank ever sent to the peer"};
  }
  return {};
}

}  // namespace gloo_lite::ibverbs::wire
