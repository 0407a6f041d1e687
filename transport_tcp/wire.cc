#include "transport_tcp/wire.h"

#include "gloo_lite/base/socket.h"

namespace gloo_lite::tcp::wire {

// Byte 1 of every frame header: catches a stream that has lost its framing.
constexpr uint8_t kFrameMarker = 0xA7;

void encode_hello(const Hello& hello, uint8_t out[kHelloBytes]) {
  put_u32(out + 0, hello.magic);
  put_u16(out + 4, hello.version);
  put_u16(out + 6, hello.kind);
  put_u64(out + 8, hello.context_id);
  put_u32(out + 16, hello.src_rank);
  put_u32(out + 20, hello.dst_rank);
  put_u32(out + 24, hello.size);
  put_u32(out + 28, hello.flags);
  put_u64(out + 32, hello.nonce);
}

Hello decode_hello(const uint8_t in[kHelloBytes]) {
  Hello hello;
  hello.magic = get_u32(in + 0);
  hello.version = get_u16(in + 4);
  hello.kind = get_u16(in + 6);
  hello.context_id = get_u64(in + 8);
  hello.src_rank = get_u32(in + 16);
  hello.dst_rank = get_u32(in + 20);
  hello.size = get_u32(in + 24);
  hello.flags = get_u32(in + 28);
  hello.nonce = get_u64(in + 32);
  return hello;
}

void encode_header(const FrameHeader& header, uint8_t out[kHeaderBytes]) {
  out[0] = static_cast<uint8_t>(header.type);
  out[1] = kFrameMarker;
  out[2] = header.error;
  out[3] = 0;
  put_u32(out + 4, header.send_id);
  put_u32(out + 8, header.recv_id);
  put_u32(out + 12, header.origin);
  put_u64(out + 16, header.tag);
  put_u64(out + 24, header.length);
  put_u64(out + 32, header.fingerprint);
  put_u64(out + 40, header.sent);
}

bool decode_header(const uint8_t in[kHeaderBytes], FrameHeader* header) {
  if (in[0] == 0 || in[0] > kMaxFrameType || in[1] != kFrameMarker) return false;
  header->type = static_cast<FrameType>(in[0]);
  header->error = in[2];
  header->send_id = get_u32(in + 4);
  header->recv_id = get_u32(in + 8);
  header->origin = get_u32(in + 12);
  header->tag = get_u64(in + 16);
  header->length = get_u64(in + 24);
  header->fingerprint = get_u64(in + 32);
  header->sent = get_u64(in + 40);
  return true;
}

}  // namespace gloo_lite::tcp::wire
