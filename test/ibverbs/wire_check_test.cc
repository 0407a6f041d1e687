// The ibverbs header checks (wire::check, wire::check_credits): every field of a received
// header is untrusted input. Pure functions: these run without an RDMA device; the protocol
// around them (a peer's CTS for another peer's send and such) runs in the VM stage.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "transport_ibverbs/wire.h"

namespace gloo_lite::ibverbs::wire {
namespace {

constexpr size_t kSlot = 8192;

// What a well-behaved sender puts on the wire for each type (as ib_protocol.cc encodes it).
Header valid(Type type) {
  switch (type) {
    case Type::kEager:
      return {type, 3, 77, 100, 0, 0xfeed};
    case Type::kReadyToSend:
      return {type, 3, 77, 1 << 20, 5, 0xfeed};
    case Type::kClearToSend:
      return {type, 3, 5, 0x7f0000001000, 9 | (uint64_t{0xabcd} << 32), 0};
    case Type::kMismatch:
      return {type, 3, 77, 100, 200, 0};
    case Type::kCredit:
      return {type, 3, 0, 0, 0, 0};
    case Type::kHello:
      return {type, 0, 0x1234, 1 | (uint64_t{2} << 32), 4, 0};
    case Type::kSendCancelled:
    case Type::kCancelReceive:
    case Type::kReceiveCancelled:
      return {type, 3, 9, 0, 0, 0};
  }
  return {};
}

size_t bytes_of(const Header& h) {
  return kHeaderBytes + (h.type == Type::kEager ? static_cast<size_t>(h.b) : 0);
}

const Type kTypes[] = {Type::kEager,         Type::kReadyToSend,   Type::kClearToSend,
                       Type::kSendCancelled, Type::kMismatch,      Type::kCredit,
                       Type::kHello,         Type::kCancelReceive, Type::kReceiveCancelled};

// The problem's field, or "" when the header passes.
std::string field_of(const Header& h, size_t received) {
  Problem problem = check(h, received, kSlot);
  return problem ? problem.field : "";
}

TEST(WireCheck, WhatTheEncoderSendsPasses) {
  for (Type type : kTypes) {
    Header h = valid(type);
    EXPECT_EQ(field_of(h, bytes_of(h)), "") << type_name(type);
    // Through the codec too: the reserved bytes are 0.
    uint8_t bytes[kHeaderBytes];
    encode(h, bytes);
    Header decoded;
    ASSERT_TRUE(decode(bytes, &decoded)) << type_name(type);
    EXPECT_EQ(field_of(decoded, bytes_of(h)), "") << type_name(type);
  }
}

TEST(WireCheck, EagerLengthMustBeWhatArrivedAndFitTheBuffer) {
  Header h = valid(Type::kEager);
  EXPECT_EQ(field_of(h, kHeaderBytes + 99), "length");  // would copy a stale byte
  EXPECT_EQ(field_of(h, kHeaderBytes + 101), "length");
  h.b = kSlot;  // more than the buffer holds
  Problem problem = check(h, kHeaderBytes + h.b, kSlot);
  ASSERT_TRUE(problem);
  EXPECT_NE(std::string(problem.rule).find("GLOO_LITE_IB_BUFFER_BYTES"), std::string::npos);
  h.b = kSlot - kHeaderBytes;  // exactly full
  EXPECT_EQ(field_of(h, kSlot), "");
  h.b = UINT64_MAX;  // no overflow in the sum
  EXPECT_EQ(field_of(h, kHeaderBytes - 1 + 0), "length");
}

TEST(WireCheck, ControlMessagesAreTheHeaderAlone) {
  for (Type type : kTypes) {
    if (type == Type::kEager) continue;
    EXPECT_EQ(field_of(valid(type), kHeaderBytes + 1), "message size") << type_name(type);
  }
}

TEST(WireCheck, IdsAreNonZero32Bit) {
  Header rts = valid(Type::kReadyToSend);
  for (uint64_t bad : {uint64_t{0}, uint64_t{1} << 32, UINT64_MAX}) {
    rts.c = bad;
    EXPECT_EQ(field_of(rts, kHeaderBytes), "send id") << bad;
  }
  Header cts = valid(Type::kClearToSend);
  cts.a = 0;
  EXPECT_EQ(field_of(cts, kHeaderBytes), "send id");
  cts.a = uint64_t{1} << 40;
  EXPECT_EQ(field_of(cts, kHeaderBytes), "send id");
  cts = valid(Type::kClearToSend);
  cts.c = uint64_t{0xabcd} << 32;  // an rkey but recv id 0
  EXPECT_EQ(field_of(cts, kHeaderBytes), "recv id");
  for (Type type : {Type::kSendCancelled, Type::kCancelReceive, Type::kReceiveCancelled}) {
    Header h = valid(type);
    h.a = 0;
    EXPECT_EQ(field_of(h, kHeaderBytes), "recv id") << type_name(type);
    h.a = uint64_t{1} << 32;
    EXPECT_EQ(field_of(h, kHeaderBytes), "recv id") << type_name(type);
  }
}

TEST(WireCheck, UnusedFieldsMustBeZero) {
  Header credit = valid(Type::kCredit);
  credit.b = 1;
  EXPECT_EQ(field_of(credit, kHeaderBytes), "field b");
  Header cancel = valid(Type::kCancelReceive);
  cancel.fingerprint = 42;
  EXPECT_EQ(field_of(cancel, kHeaderBytes), "fingerprint");
  Header cts = valid(Type::kClearToSend);
  cts.fingerprint = 1;
  EXPECT_EQ(field_of(cts, kHeaderBytes), "fingerprint");
  Header eager = valid(Type::kEager);
  eager.c = 5;
  EXPECT_EQ(field_of(eager, bytes_of(eager)), "field c");
}

TEST(WireCheck, MismatchNoticeMustDisagree) {
  Header h = valid(Type::kMismatch);
  h.c = h.b;
  EXPECT_EQ(field_of(h, kHeaderBytes), "bytes sent");
}

TEST(WireCheck, DescribeNamesTypeFieldAndValue) {
  Header h = valid(Type::kClearToSend);
  h.a = 0;
  EXPECT_EQ(describe(h.type, check(h, kHeaderBytes, kSlot)),
            "clear-to-send header: send id 0 (must be a non-zero 32-bit id)");
}

TEST(WireCheck, CreditsNeverGoBackNorPassWhatWasSent) {
  EXPECT_FALSE(check_credits(5, 5, 10));
  EXPECT_FALSE(check_credits(10, 5, 10));
  // Wrapping counters: 2^32 - 2 -> 3 is forward.
  EXPECT_FALSE(check_credits(3, UINT32_MAX - 1, 4));
  Problem back = check_credits(4, 5, 10);
  ASSERT_TRUE(back);
  EXPECT_NE(std::string(back.rule).find("went back"), std::string::npos);
  Problem beyond = check_credits(11, 5, 10);
  ASSERT_TRUE(beyond);
  EXPECT_EQ(beyond.value, 11u);
  EXPECT_NE(std::string(beyond.rule).find("more messages"), std::string::npos);
}

TEST(WireCheck, DecodeRejectsReservedBytes) {
  uint8_t bytes[kHeaderBytes];
  encode(valid(Type::kCredit), bytes);
  Header h;
  EXPECT_TRUE(decode(bytes, &h));
  bytes[2] = 1;
  EXPECT_FALSE(decode(bytes, &h));
  bytes[2] = 0;
  bytes[3] = 0x80;
  EXPECT_FALSE(decode(bytes, &h));
}

}  // namespace
}  // namespace gloo_lite::ibverbs::wire
