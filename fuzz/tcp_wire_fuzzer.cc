// Fuzzes the TCP transport's wire decoders (transport_tcp/wire.h): the handshake (Hello) and
// the frame header, which both read bytes straight from a peer's socket.
// Input: one mode byte (odd: handshake; even: frame header, where bit 1 set means "force a
// valid type and marker first"), then the bytes on the wire.
// Invariants: a decoder reads only its fixed-size block (ASan: exact heap copies); every
// handshake decodes and re-encodes to the same bytes (each byte is a field); an accepted frame
// header has a valid type, re-encodes to bytes that decode again, and that encoding is a fixed
// point (decode(encode(h)) == h, compared through encodings so that the check holds whatever
// fields the header has); every valid type with the marker is accepted.
#include "fuzz/fuzz_check.h"
#include "transport_tcp/wire.h"

namespace wire = gloo_lite::tcp::wire;
using gloo_lite::fuzz::exact_copy;
using gloo_lite::fuzz::Input;

namespace {

void fuzz_hello(Input& input) {
  const uint8_t* bytes = input.take(wire::kHelloBytes);
  if (bytes == nullptr) return;
  auto in = exact_copy(bytes, wire::kHelloBytes);
  wire::Hello hello = wire::decode_hello(in.get());
  uint8_t out[wire::kHelloBytes];
  wire::encode_hello(hello, out);
  FUZZ_CHECK(std::memcmp(out, in.get(), wire::kHelloBytes) == 0);
}

// Byte 1 of every header, whatever its value: read from an encoded default header.
uint8_t frame_marker() {
  uint8_t out[wire::kHeaderBytes];
  wire::encode_header(wire::FrameHeader{}, out);
  return out[1];
}

void fuzz_header(Input& input, bool force_valid) {
  const uint8_t* bytes = input.take(wire::kHeaderBytes);
  if (bytes == nullptr) return;
  auto in = exact_copy(bytes, wire::kHeaderBytes);
  if (force_valid) {
    in[0] = static_cast<uint8_t>(1 + in[0] % wire::kMaxFrameType);
    in[1] = frame_marker();
  }
  wire::FrameHeader header;
  bool accepted = wire::decode_header(in.get(), &header);
  FUZZ_CHECK(accepted || !force_valid);
  if (!accepted) return;
  auto type = static_cast<uint8_t>(header.type);
  FUZZ_CHECK(type >= 1 && type <= wire::kMaxFrameType && type == in[0]);
  (void)wire::has_payload(header.type);
  auto once = std::make_unique<uint8_t[]>(wire::kHeaderBytes);
  wire::encode_header(header, once.get());
  wire::FrameHeader again;
  FUZZ_CHECK(wire::decode_header(once.get(), &again));
  FUZZ_CHECK(again.type == header.type);
  auto twice = std::make_unique<uint8_t[]>(wire::kHeaderBytes);
  wire::encode_header(again, twice.get());
  FUZZ_CHECK(std::memcmp(once.get(), twice.get(), wire::kHeaderBytes) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input input(data, size);
  uint8_t mode = input.byte();
  if (mode & 1) {
    fuzz_hello(input);
  } else {
    fuzz_header(input, (mode & 2) != 0);
  }
  return 0;
}
