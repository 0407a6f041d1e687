// The bound of the unexpected queue (messages that arrived before their receive) covers memory,
// not only payload bytes: every entry is charged its payload plus kUnexpectedEntryBytes
// (gloo_lite/transport/matching.h), so many tiny messages fill it at the count that charge gives.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/transport/matching.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;

constexpr size_t kPayload = 8;
constexpr size_t kFit = 40;  // entries the bound below holds
constexpr size_t kCharge = kPayload + transport::kUnexpectedEntryBytes;
constexpr uint64_t kGoTag = 1 << 20;
constexpr uint64_t kMarkerTag = kGoTag + 1;
constexpr uint64_t kDoneTag = kGoTag + 2;

uint64_t value_of(size_t i) { return i * 7919 + 13; }

// Rank 0 sends `sent` 8-byte messages under tags of their own, which rank 1 has not posted,
// then a marker whose receive rank 1 posted first. The marker travels behind them (per pair
// nothing overtakes), so it arrives only if every one of them fits the queue: with
// kFit * kCharge bytes of bound, kFit do and kFit + 1 do not (counting payloads only, 1320
// would). Then rank 1 takes them all, in order, and the marker follows.
void run(size_t sent) {
  ContextOptions options;
  options.mesh.unexpected_bytes = kFit * kCharge;
  options.timeout = std::chrono::seconds(30);
  expect_all_ok(run_context_processes(
      2,
      [&](Context& context) {
        auto& mesh = engine_of(context).mesh();
        std::vector<uint64_t> values(sent + 2, 0);
        auto memory = mesh.register_memory(values.data(), values.size() * sizeof(uint64_t));
        const size_t marker = sent * sizeof(uint64_t);
        const size_t token = marker + sizeof(uint64_t);
        if (context.rank() == 0) {
          mesh.wait({mesh.recv(1, kGoTag, *memory, token, 0)}, engine_of(context).deadline());
          std::vector<transport::RequestPtr> sends;
          for (size_t i = 0; i < sent; ++i) {
            values[i] = value_of(i);
            sends.push_back(mesh.send(1, 1 + i, *memory, i * sizeof(uint64_t), kPayload));
          }
          values[sent] = 4242;
          sends.push_back(mesh.send(1, kMarkerTag, *memory, marker, kPayload));
          mesh.wait(sends, engine_of(context).deadline());
          // Stay until rank 1 has looked: a closed peer's last messages skip the bound.
          mesh.wait({mesh.recv(1, kDoneTag, *memory, token, 0)}, engine_of(context).deadline());
          return;
        }
        auto marker_receive = mesh.recv(0, kMarkerTag, *memory, marker, kPayload);
        mesh.wait({mesh.send(0, kGoTag, *memory, token, 0)}, engine_of(context).deadline());
        bool arrived = true;
        std::string why;
        try {
          mesh.wait({marker_receive}, Deadline::after(milliseconds(1500)));
        } catch (const TimeoutError& e) {
          arrived = false;
          why = e.what();
        }
        if (sent <= kFit) {
          EXPECT_TRUE(arrived) << sent << " messages of " << kCharge
                               << " bytes charged each should fit: " << why;
        } else {
          EXPECT_FALSE(arrived) << "the queue took " << sent << " entries of " << kCharge
                                << " bytes charged each under a bound of " << kFit * kCharge;
          // The timeout says why, and which knob raises the bound.
          EXPECT_NE(why.find(std::to_string(kFit) + " messages, " + std::to_string(kFit * kCharge) +
                             " bytes charged"),
                    std::string::npos)
              << why;
          EXPECT_NE(why.find("_UNEXPECTED_BYTES=" + std::to_string(kFit * kCharge)),
                    std::string::npos)
              << why;
        }
        // Receives take the queued messages in order; the one held back, then the marker,
        // follow, and nothing was lost.
        std::vector<transport::RequestPtr> receives;
        for (size_t i = 0; i < sent; ++i) {
          receives.push_back(mesh.recv(0, 1 + i, *memory, i * sizeof(uint64_t), kPayload));
        }
        if (!arrived) receives.push_back(mesh.recv(0, kMarkerTag, *memory, marker, kPayload));
        mesh.wait(receives, engine_of(context).deadline());
        for (size_t i = 0; i < sent; ++i) ASSERT_EQ(values[i], value_of(i)) << "message " << i;
        EXPECT_EQ(values[sent], 4242u);
        mesh.wait({mesh.send(0, kDoneTag, *memory, token, 0)}, engine_of(context).deadline());
      },
      std::chrono::seconds(60), options));
}

TEST(UnexpectedBound, TinyMessagesFitAtTheCountTheEntryChargeGives) { run(kFit); }

TEST(UnexpectedBound, OneMoreTinyMessageIsHeldBackAndTheTimeoutNamesTheKnob) { run(kFit + 1); }

// Rank 0 sends three times as many small messages as rank 1's queue holds (the rest wait in the
// transport: a socket, a ring, receive buffers), waits for its sends and closes its context.
// Nothing that was sent is lost with the goodbye: once rank 0 has exited, rank 1 receives every
// message, in order, and only a receive beyond them fails, naming rank 0's clean shutdown.
// (ibverbs once dropped the messages held in its receive buffers when the goodbye came.)
TEST(UnexpectedBound, AClosedPeersLastMessagesAreAllDelivered) {
  constexpr size_t kQueued = 8;          // entries the bound holds
  constexpr size_t kSent = 3 * kQueued;  // within ibverbs' 32 credited receive buffers
  constexpr uint64_t kPidTag = kGoTag + 3;
  constexpr uint64_t kAfterTag = kGoTag + 4;
  ContextOptions options;
  options.mesh.unexpected_bytes = kQueued * kCharge;
  options.timeout = std::chrono::seconds(30);
  expect_all_ok(run_context_processes(
      2,
      [&](Context& context) {
        auto& mesh = engine_of(context).mesh();
        std::vector<uint64_t> values(kSent + 1, 0);
        auto memory = mesh.register_memory(values.data(), values.size() * sizeof(uint64_t));
        const size_t pid_at = kSent * sizeof(uint64_t);
        if (context.rank() == 0) {
          values[kSent] = static_cast<uint64_t>(getpid());
          mesh.wait({mesh.send(1, kPidTag, *memory, pid_at, sizeof(uint64_t))},
                    engine_of(context).deadline());
          std::vector<transport::RequestPtr> sends;
          for (size_t i = 0; i < kSent; ++i) {
            values[i] = value_of(i);
            sends.push_back(mesh.send(1, 1 + i, *memory, i * sizeof(uint64_t), kPayload));
          }
          mesh.wait(sends, engine_of(context).deadline());
          return;  // the harness closes the context: the goodbye follows the messages
        }
        mesh.wait({mesh.recv(0, kPidTag, *memory, pid_at, sizeof(uint64_t))},
                  engine_of(context).deadline());
        const int pid = static_cast<int>(values[kSent]);
        ASSERT_TRUE(wait_process_gone(pid, std::chrono::seconds(20))) << "rank 0 did not exit";
        usleep(500000);  // whatever notices the goodbye has run (ibverbs: every 50 ms)
        std::vector<transport::RequestPtr> receives;
        for (size_t i = 0; i < kSent; ++i) {
          receives.push_back(mesh.recv(0, 1 + i, *memory, i * sizeof(uint64_t), kPayload));
        }
        mesh.wait(receives, engine_of(context).deadline());
        for (size_t i = 0; i < kSent; ++i) ASSERT_EQ(values[i], value_of(i)) << "message " << i;
        try {
          mesh.wait({mesh.recv(0, kAfterTag, *memory, 0, kPayload)}, engine_of(context).deadline());
          ADD_FAILURE() << "a receive from a closed peer completed";
        } catch (const ConnectionError& e) {
          EXPECT_NE(std::string(e.what()).find("clean shutdown"), std::string::npos) << e.what();
        }
      },
      std::chrono::seconds(60), options));
}

}  // namespace
}  // namespace gloo_lite::test
