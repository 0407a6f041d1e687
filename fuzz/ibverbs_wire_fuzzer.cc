// Fuzzes the ibverbs transport's message header decoder (transport_ibverbs/wire.h), which reads
// the header at the start of every SEND a peer posts.
// Input: one mode byte (bit 0 set: force a valid type and the marker first), then the header.
// Invariants: the decoder reads only its kHeaderBytes (ASan: an exact heap copy); an accepted
// header has a valid type, re-encodes to bytes that decode again, and that encoding is a fixed
// point (decode(encode(h)) == h, compared through encodings so that the check holds whatever
// fields the header has); every valid type with the marker is accepted.
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
  }
  wire::Header header;
  bool accepted = wire::decode(in.get(), &header);
  FUZZ_CHECK(accepted || !force_valid);
  if (!accepted) return 0;
  auto type = static_cast<uint8_t>(header.type);
  FUZZ_CHECK(type >= 1 && type <= kLastType && type == in[0]);
  auto once = std::make_unique<uint8_t[]>(wire::kHeaderBytes);
  wire::encode(header, once.get());
  wire::Header again;
  FUZZ_CHECK(wire::decode(once.get(), &again));
  FUZZ_CHECK(again.type == header.type && again.credits == header.credits);
  auto twice = std::make_unique<uint8_t[]>(wire::kHeaderBytes);
  wire::encode(again, twice.get());
  FUZZ_CHECK(std::memcmp(once.get(), twice.get(), wire::kHeaderBytes) == 0);
  return 0;
}
