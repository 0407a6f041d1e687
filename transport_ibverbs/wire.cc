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
  if (in[1] != kMarker || in[0] < 1 || in[0] > 9) return false;
  header->type = static_cast<Type>(in[0]);
  header->credits = static_cast<uint32_t>(get(in + 4, 4));
  header->a = get(in + 8, 8);
  header->b = get(in + 16, 8);
  header->c = get(in + 24, 8);
  header->fingerprint = get(in + 32, 8);
  return true;
}

}  // namespace gloo_lite::ibverbs::wire
