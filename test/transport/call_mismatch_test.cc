// The call check of the transport contract (transport.h): a message whose call fingerprint
// differs from its receive's fails that receive with MismatchError naming both ranks, writes
// nothing into the receive buffer, and aborts the mesh so that the sender and every other rank
// fail promptly with the same cause. Checked where the message matches: a receive already
// posted, or a message waiting in the unexpected queue; eager and rendezvous. A fingerprint of
// 0 (point-to-point) matches any call.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/context_engine.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kSenderCall = 0x8123456789abcdefull;
constexpr uint64_t kReceiverCall = 0x8123456789abcdeeull;
constexpr uint64_t kTag = 5;
constexpr uint64_t kOrderTag = 6;   // unchecked token that orders posting against arrival
constexpr uint64_t kSilentTag = 7;  // nobody sends on it: a wait that only a failure ends
// Well under the 20 s deadline: the abort reaches every rank within milliseconds.
constexpr auto kPrompt = 5s;

long elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

void token(Context& context, int peer, bool send, uint64_t tag) {
  auto& mesh = engine_of(context).mesh();
  uint32_t value = 1;
  auto memory = mesh.register_memory(&value, sizeof(value));
  auto request = send ? mesh.send(peer, tag, *memory, 0, sizeof(value))
                      : mesh.recv(peer, tag, *memory, 0, sizeof(value));
  mesh.wait({request}, engine_of(context).deadline());
}

// Waits on a receive nobody satisfies: returns what ended it, and how fast.
std::string wait_for_failure(Context& context, int peer, long* ms) {
  auto& mesh = engine_of(context).mesh();
  uint32_t value = 0;
  auto memory = mesh.register_memory(&value, sizeof(value));
  auto start = Clock::now();
  try {
    mesh.wait({mesh.recv(peer, kSilentTag, *memory, 0, sizeof(value))},
              engine_of(context).deadline());
  } catch (const MismatchError& e) {
    *ms = elapsed_ms(start);
    return e.what();
  } catch (const std::exception& e) {
    *ms = elapsed_ms(start);
    return std::string("not a MismatchError: ") + e.what();
  }
  return "the wait succeeded";
}

struct Case {
  size_t bytes;
  bool posted_first;  // the receive is posted before the message arrives
};

class CallMismatch : public ::testing::TestWithParam<Case> {};

TEST_P(CallMismatch, FailsTheReceiveAndAbortsTheMeshWithThatCause) {
  Case c = GetParam();
  ContextOptions options;
  options.timeout = 20s;
  expect_all_ok(run_context_processes(
      3,
      [c](Context& context) {
        auto& mesh = engine_of(context).mesh();
        if (context.rank() == 0) {
          std::vector<uint8_t> data(c.bytes, 1);
          auto memory = mesh.register_memory(data.data(), data.size());
          if (c.posted_first) token(context, 1, /*send=*/false, kOrderTag);
          auto start = Clock::now();
          try {
            auto send = mesh.send(1, kTag, *memory, 0, c.bytes, kSenderCall);
            if (!c.posted_first) token(context, 1, /*send=*/true, kOrderTag);
            mesh.wait({send}, engine_of(context).deadline());
            // An eager send completes once written; the abort ends the next wait.
            long ms = 0;
            std::string error = wait_for_failure(context, 1, &ms);
            EXPECT_NE(error.find("collective mismatch"), std::string::npos) << error;
          } catch (const MismatchError& e) {
            EXPECT_NE(std::string(e.what()).find("collective mismatch"), std::string::npos)
                << e.what();
          }
          EXPECT_LT(elapsed_ms(start), std::chrono::milliseconds(kPrompt).count());
        } else if (context.rank() == 1) {
          std::vector<uint8_t> buffer(c.bytes, 0xCC);
          auto memory = mesh.register_memory(buffer.data(), buffer.size());
          // Arrival first: the order token follows the message on the same connection.
          if (!c.posted_first) token(context, 0, /*send=*/false, kOrderTag);
          auto request = mesh.recv(0, kTag, *memory, 0, c.bytes, kReceiverCall);
          if (c.posted_first) token(context, 0, /*send=*/true, kOrderTag);
          auto start = Clock::now();
          try {
            mesh.wait({request}, engine_of(context).deadline());
            ADD_FAILURE() << "a message of another call completed the receive";
          } catch (const MismatchError& e) {
            std::string text = e.what();
            EXPECT_NE(text.find("collective mismatch: rank 1"), std::string::npos) << text;
            EXPECT_NE(text.find("from rank 0"), std::string::npos) << text;
          }
          EXPECT_LT(elapsed_ms(start), std::chrono::milliseconds(kPrompt).count());
          for (size_t i = 0; i < buffer.size(); ++i) {
            ASSERT_EQ(buffer[i], 0xCC) << "byte " << i << " of the rejected message was written";
          }
        } else {
          // Rank 2 is in no disagreement; it learns the cause from rank 1's abort.
          long ms = 0;
          std::string error = wait_for_failure(context, 0, &ms);
          EXPECT_NE(error.find("collective mismatch"), std::string::npos) << error;
          EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
          EXPECT_LT(ms, std::chrono::milliseconds(kPrompt).count()) << error;
        }
      },
      60s, options));
}

INSTANTIATE_TEST_SUITE_P(EagerAndRendezvous, CallMismatch,
                         ::testing::Values(Case{1000, true}, Case{1000, false},
                                           Case{4u << 20, true}, Case{4u << 20, false}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.bytes < 4096 ? "Eager" : "Rendezvous") +
                                  (info.param.posted_first ? "Posted" : "Unexpected");
                         });

// 0 on either side is unchecked: the data arrives intact.
TEST(CallMismatch, UncheckedMatchesAnyCall) {
  expect_all_ok(run_context_processes(2, [](Context& context) {
    auto& mesh = engine_of(context).mesh();
    const uint64_t fingerprints[][2] = {
        {kSenderCall, 0}, {0, kReceiverCall}, {kSenderCall, kSenderCall}};
    // A tag is one call (transport.h): each case has its own, in increasing order as a stream's
    // calls are (a waiting message is judged against the receiver's call of its tag).
    uint64_t tag = kTag;
    for (size_t bytes : {size_t{100}, size_t{1} << 20}) {
      for (size_t i = 0; i < 3; ++i) {
        uint64_t salt = bytes + i;
        ++tag;
        if (context.rank() == 0) {
          std::vector<uint8_t> data = make_pattern(0, 1, bytes, salt);
          auto memory = mesh.register_memory(data.data(), data.size());
          mesh.wait({mesh.send(1, tag, *memory, 0, bytes, fingerprints[i][0])},
                    engine_of(context).deadline());
        } else {
          std::vector<uint8_t> data(bytes, 0);
          auto memory = mesh.register_memory(data.data(), data.size());
          mesh.wait({mesh.recv(0, tag, *memory, 0, bytes, fingerprints[i][1])},
                    engine_of(context).deadline());
          EXPECT_EQ(first_mismatch(data, 0, 1, salt), -1) << bytes << " bytes, case " << i;
        }
      }
    }
  }));
}

}  // namespace
}  // namespace gloo_lite::test
