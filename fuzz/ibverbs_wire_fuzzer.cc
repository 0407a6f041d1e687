// Fuzzes the ibverbs transport's message header decoder (transport_ibverbs/wire.h), which reads
// the header at the start of every SEND a peer posts.
// Input: one mode byte (bit 0 set: force a valid type, the marker and zero reserved bytes
// first), then the header, then what the receiver's checks see: the SEND's byte length (2
// bytes, little-endian), the eager buffer size (1 byte: 256 << (n % 16)) and the credit counters
// (4 bytes each: last seen, sent).
// Invariants: the decoder reads only its kHeaderBytes (ASan: an exact heap copy); an accepted
// header has a valid type and zero reserved bytes, re-encodes to bytes that decode again, and
// that encoding is a fixed point (decode(encode(h)) == h, compared through encodings so that the
// check holds whatever fields the header has); every valid type with the marker is accepted.
// wire::check never fails on what the encoder sends for the same values, and a header it
// passes has a length that matches what arrived and fits the buffer (eager) or is the header
// alone; wire::check_credits passes only credits that neither go back nor pass `sent`; every
// problem describes itself naming the header type.
#include <cstring>
#include <string>

#include "fuzz/fuzz_check.h"
#include "transport_ibverbs/wire.h"

namespace wire = gloo_lite::ibverbs::wire;
using gloo_lite::fuzz::exact_copy;
using gloo_lite::fuzz::Input;

namespace {

constexpr uint8_t kLastType = static_cast<uint8_t>(wire::Type::kReceiveCancelled);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input input(data, size);
  bool force_valid = (input.byte() & 1) != 0;
  const uint8_t* bytes = input.take(wire::kHeaderBytes);
  if (bytes == nullptr) return 0;
  auto in = exact_copy(bytes, wire::kHeaderBytes);
  if (force_valid) {
    in[0] = static_cast<uint8_t>(1 + in[0] % kLastType);
    in[1] = wire::kMarker;
    in[2] = in[3] = 0;
  }
  wire::Header header;
  bool accepted = wire::decode(in.get(), &header);
  FUZZ_CHECK(accepted || !force_valid);
  if (!accepted) return 0;
  auto type = static_cast<uint8_t>(header.type);
  FUZZ_CHECK(type >= 1 && type <= kLastType && type == in[0] && in[2] == 0 && in[3] == 0);
  auto once = std::make_unique<uint8_t[]>(wire::kHeaderBytes);
  wire::encode(header, once.get());
  wire::Header again;
  FUZZ_CHECK(wire::decode(once.get(), &again));
  FUZZ_CHECK(again.type == header.type && again.credits == header.credits);
  auto twice = std::make_unique<uint8_t[]>(wire::kHeaderBytes);
  wire::encode(again, twice.get());
  FUZZ_CHECK(std::memcmp(once.get(), twice.get(), wire::kHeaderBytes) == 0);

  // The receiver's checks on the same header.
  size_t received = input.byte();
  received |= size_t{input.byte()} << 8;
  const size_t slot_bytes = size_t{256} << (input.byte() % 16);
  uint32_t last = static_cast<uint32_t>(input.u64());
  uint32_t sent = static_cast<uint32_t>(input.u64());
  wire::Problem problem = wire::check(header, received, slot_bytes);
  if (problem) {
    std::string text = wire::describe(header.type, problem);
    FUZZ_CHECK(text.compare(0, std::strlen(wire::type_name(header.type)),
                            wire::type_name(header.type)) == 0);
  } else if (header.type == wire::Type::kEager) {
    FUZZ_CHECK(header.b <= slot_bytes - wire::kHeaderBytes &&
               received == wire::kHeaderBytes + header.b);
  } else {
    FUZZ_CHECK(received == wire::kHeaderBytes);
  }
  if (!wire::check_credits(header.credits, last, sent)) {
    FUZZ_CHECK(static_cast<int32_t>(header.credits - last) >= 0 &&
               static_cast<int32_t>(sent - header.credits) >= 0);
  }
  return 0;
}
