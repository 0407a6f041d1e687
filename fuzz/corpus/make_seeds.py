#!/usr/bin/env python3
"""Writes the seed inputs in fuzz/corpus/<target>/: a few valid messages per target, laid out as
each target's header comment describes (fuzz/*_fuzzer.cc). Rerun after a wire format changes:
    python3 fuzz/corpus/make_seeds.py"""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    os.makedirs(os.path.join(here, target), exist_ok=True)
    with open(os.path.join(here, target, name), "wb") as f:
        f.write(data)


# transport_tcp/wire.h: mode byte, then a 40-byte hello or a frame header. Headers are padded
# with zeros (to 48 and 40 bytes) so that the seeds still reach the decoders when a header
# grows; the targets ignore bytes after the header.
hello = struct.pack("<IHHQIIIIQ", 0x544C4C47, 1, 1, 0x1122334455667788, 0, 1, 2, 0, 42)
write("tcp_wire_fuzzer", "hello", b"\x01" + hello)
for frame_type in range(1, 9):
    header = struct.pack("<BBHIQQQ", frame_type, 0xA7, 0, 0, 7, 4096, 3)
    write("tcp_wire_fuzzer", "frame_%d" % frame_type, b"\x00" + header + bytes(16))
write("tcp_wire_fuzzer", "forced", b"\x02" + bytes(range(48)))

# transport_ibverbs/wire.h: mode byte, then a header.
for kind in range(1, 10):
    header = struct.pack("<BBHIQQQ", kind, 0xB5, 0, 16, 7, 4096, 3 | 0x1234 << 32)
    write("ibverbs_wire_fuzzer", "header_%d" % kind, b"\x00" + header + bytes(8))
write("ibverbs_wire_fuzzer", "forced", b"\x01" + bytes(range(40)))


# rendezvous/tcp_store_protocol.h: mode byte 0, then (control | request)...; mode 1: a response.
def items(*values):
    return struct.pack("<I", len(values)) + b"".join(
        struct.pack("<I", len(v)) + v for v in values)


def request(op, timeout_ms, *values, client=0, wait_ms=0):
    body = items(*values)
    return bytes([client | wait_ms << 2]) + struct.pack(
        "<IHHII", 0x54534C47, 1, op, timeout_ms, len(body)) + body


SET, GET, WAIT, ADD, CHECK, ERASE = range(1, 7)
write("tcp_store_protocol_fuzzer", "session", b"\x00" + b"".join([
    request(SET, 0, b"rank/0", b"10.0.0.1:4000"),
    request(GET, 1000, b"rank/0", b"rank/0"),
    request(ADD, 0, b"barrier", struct.pack("<q", 1)),
    request(ADD, 0, b"barrier", struct.pack("<q", -3)),
    request(CHECK, 0, b"rank/0", b"barrier"),
    request(ERASE, 0, b"rank/0"),
    request(GET, 0, b"rank/0"),
]))
write("tcp_store_protocol_fuzzer", "parked", b"\x00" + b"".join([
    request(WAIT, 5000, b"rank/1", client=1),
    request(GET, 0xFFFFFFFF, b"rank/1", b"rank/2", client=2),
    request(SET, 0, b"rank/1", b"a", client=0, wait_ms=3),
    request(SET, 0, b"rank/2", b"b", client=3),
    request(GET, 10, b"never", client=1, wait_ms=63),
]))
write("tcp_store_protocol_fuzzer", "response_ok",
      b"\x01" + struct.pack("<IHHI", 0x54534C47, 1, 0, len(items(b"v1", b"")))
      + items(b"v1", b""))
write("tcp_store_protocol_fuzzer", "response_error",
      b"\x01" + struct.pack("<IHHI", 0x54534C47, 1, 2, len(items(b"no")))
      + items(b"no"))

# rendezvous/store_url.h: the accepted forms.
for i, url in enumerate([b"file:///tmp/gloo_lite_store", b"tcp://host-1:29500",
                         b"tcp://[::1]:29500", b"redis://:p%40ss@redis.example:6380/2",
                         b"redis://127.0.0.1", b"redis://[fe80::1]/0"]):
    write("store_url_fuzzer", "url_%d" % i, url)


# rendezvous/file_store.cc: key length | key | delta (8 bytes) | value file contents.
def record(key, delta, value):
    return bytes([len(key)]) + key + struct.pack(">q", delta) + value


write("file_store_fuzzer", "value", record(b"ctx/rank/0/addr", 0, b"10.0.0.1:4000\x00\xff"))
write("file_store_fuzzer", "counter", record(b"barrier/3", 1, b"41"))
write("file_store_fuzzer", "negative", record(b"c", -1, b"-9223372036854775807"))
write("file_store_fuzzer", "long_key", record(b"%/" * 120, 5, b""))
