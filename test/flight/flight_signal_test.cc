// Flight recorder dumps by signal (issue 9, "From hang to culprit"): SIGUSR1 to a rank blocked
// in a collective prints that rank's record (the call in flight, the ones completed) and the job
// goes on to correct results; SIGUSR1 to gloo_lite_run reaches every rank; a bad
// GLOO_LITE_FLIGHT_SIGNAL fails at start.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/flight_signal.h"
#include "test/launcher/command.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const milliseconds kBound = seconds(20);
constexpr int kLateAt = 3;  // allreduces before the one the late rank holds up
constexpr int kCalls = 6;
// What starts each dump block on a rank's stderr.
constexpr const char* kHeading = "[flight] WARN SIGUSR1 (GLOO_LITE_FLIGHT_SIGNAL)";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The lines of `err` that rank `rank`'s output carries ("[R] ..."), without the tag.
std::vector<std::string> rank_lines(const std::string& err, int rank) {
  std::string tag = "[" + std::to_string(rank) + "] ";
  std::vector<std::string> lines;
  for (const auto& line : split_lines(err)) {
    if (line.compare(0, tag.size(), tag) == 0) lines.push_back(line.substr(tag.size()));
  }
  return lines;
}

// The dump block of one rank: its heading line and the entry lines under it.
struct Block {
  std::string heading;
  std::vector<std::string> entries;
};

std::vector<Block> dumps_of(const std::string& err, int rank) {
  std::vector<Block> blocks;
  bool inside = false;
  for (const auto& line : rank_lines(err, rank)) {
    if (contains(line, std::string(kHeading) + ": flight recorder of")) {
      blocks.push_back({line, {}});
      inside = true;
    } else if (inside && line.compare(0, 3, "  #") == 0) {
      blocks.back().entries.push_back(line);
    } else {
      inside = false;
    }
  }
  return blocks;
}

int count_with(const std::vector<std::string>& lines, const std::string& part) {
  int n = 0;
  for (const auto& line : lines) n += contains(line, part) ? 1 : 0;
  return n;
}

pid_t pid_in(const std::string& path) { return std::atoi(read_file(path).c_str()); }

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A job of `ranks` flight_rank processes whose last rank holds up allreduce kLateAt until the
// test lets it go. The launcher's stderr goes to DIR/err, which the test reads while it runs.
class LateJob {
 public:
  LateJob(int ranks, const std::vector<std::string>& env = {})
      : ranks_(ranks),
        command_({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"" + dir_.path() + "/err\"",
                  launcher_path(), "-n", std::to_string(ranks), "--", FLIGHT_RANK_PATH, dir_.path(),
                  std::to_string(ranks - 1), std::to_string(kLateAt), std::to_string(kCalls)},
                 env) {}

  pid_t launcher() const { return command_.pid(); }  // the shell exec'd it
  std::string dir() const { return dir_.path(); }
  std::string err() const { return read_file(dir() + "/err"); }

  // Every rank at allreduce kLateAt: the others entering it, the late one waiting outside.
  bool all_arrived() {
    for (int r = 0; r < ranks_; ++r) {
      if (!wait_file(dir() + "/in." + std::to_string(r), kBound)) return false;
    }
    return true;
  }
  pid_t rank_pid(int rank) { return pid_in(dir() + "/in." + std::to_string(rank)); }

  // Sends SIGUSR1 to `target` and waits for `blocks` more dumps, again until `done` holds for
  // what they say: a rank that had not quite entered its collective yet is asked again.
  bool signal_until(pid_t target, int blocks, const std::function<bool(const std::string&)>& done) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      int before = count_of(err(), kHeading);
      if (kill(target, SIGUSR1) != 0) return false;
      auto deadline = std::chrono::steady_clock::now() + seconds(1);
      while (count_of(err(), kHeading) < before + blocks &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(10));
      }
      if (done(err())) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  }

  // Lets the late rank go; the result's err is the launcher's stderr.
  CommandResult release_and_wait() {
    std::ofstream(dir() + "/go") << "go\n";
    CommandResult result = command_.wait(kBound);
    result.err = err();
    return result;
  }

 private:
  int ranks_;
  TempDir dir_;
  Command command_;
};

void expect_correct(const CommandResult& result, int ranks) {
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  for (int r = 0; r < ranks; ++r) {
    EXPECT_TRUE(contains(result.out, "[" + std::to_string(r) + "] rank " + std::to_string(r) +
                                         ": " + std::to_string(kCalls) + " allreduces correct"))
        << result.out;
  }
}

// A rank blocked in allreduce kLateAt: its record has the kLateAt completed allreduces and the
// one in flight, with its sequence number.
void expect_blocked_record(const Block& block, int rank, int ranks) {
  EXPECT_TRUE(contains(block.heading,
                       "(rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ")"))
      << block.heading;
  EXPECT_TRUE(contains(block.heading, "the last " + std::to_string(kLateAt + 1) + " collectives"))
      << block.heading;
  ASSERT_EQ(block.entries.size(), static_cast<size_t>(kLateAt + 1)) << block.heading;
  for (int i = 0; i < kLateAt; ++i) {
    EXPECT_TRUE(contains(block.entries[i], "#" + std::to_string(i) + " tag 0: allreduce int64 sum"))
        << block.entries[i];
    EXPECT_TRUE(contains(block.entries[i], ": done in ")) << block.entries[i];
  }
  const std::string& flying = block.entries.back();
  EXPECT_TRUE(contains(flying, "#" + std::to_string(kLateAt) + " tag 0: allreduce int64 sum"))
      << flying;
  EXPECT_TRUE(contains(flying, ": running for ")) << flying;
}

// Whether rank `rank`'s newest dump shows a call in flight.
bool shows_running(const std::string& err, int rank) {
  std::vector<Block> blocks = dumps_of(err, rank);
  return !blocks.empty() && !blocks.back().entries.empty() &&
         contains(blocks.back().entries.back(), ": running for ");
}

class FlightSignal : public ::testing::TestWithParam<const char*> {};

TEST_P(FlightSignal, RankBlockedInACollectiveDumpsItAndGoesOn) {
  LateJob job(2, {std::string("GLOO_LITE_TRANSPORT=") + GetParam()});
  ASSERT_TRUE(job.all_arrived());
  EXPECT_TRUE(job.signal_until(job.rank_pid(0), 1, [](const std::string& err) {
    return shows_running(err, 0);
  })) << job.err();
  CommandResult result = job.release_and_wait();
  expect_correct(result, 2);
  std::vector<Block> blocks = dumps_of(result.err, 0);
  ASSERT_FALSE(blocks.empty()) << result.err;
  expect_blocked_record(blocks.back(), 0, 2);
  EXPECT_TRUE(dumps_of(result.err, 1).empty()) << "only rank 0 was signalled:\n" << result.err;
}

INSTANTIATE_TEST_SUITE_P(Transports, FlightSignal, ::testing::Values("auto", "tcp"));

TEST(FlightSignalLauncher, SigusrToTheLauncherDumpsEveryRank) {
  const int ranks = 4;
  LateJob job(ranks);
  ASSERT_TRUE(job.all_arrived());
  EXPECT_TRUE(job.signal_until(job.launcher(), ranks, [&](const std::string& err) {
    for (int r = 0; r < ranks - 1; ++r) {
      if (!shows_running(err, r)) return false;
    }
    return !dumps_of(err, ranks - 1).empty();
  })) << job.err();
  CommandResult result = job.release_and_wait();
  expect_correct(result, ranks);
  for (int r = 0; r < ranks - 1; ++r) {
    std::vector<Block> blocks = dumps_of(result.err, r);
    ASSERT_FALSE(blocks.empty()) << "rank " << r << ":\n" << result.err;
    expect_blocked_record(blocks.back(), r, ranks);
  }
  // The late rank was between calls: everything it ran is done.
  std::vector<Block> late = dumps_of(result.err, ranks - 1);
  ASSERT_FALSE(late.empty()) << result.err;
  EXPECT_EQ(late.back().entries.size(), static_cast<size_t>(kLateAt)) << late.back().heading;
  EXPECT_EQ(count_with(late.back().entries, ": done in "), kLateAt) << late.back().heading;
}

TEST(FlightSignalLauncher, UserChoiceOffIsKeptAndTheSignalIgnored) {
  LateJob job(2, {"GLOO_LITE_FLIGHT_SIGNAL=off"});
  ASSERT_TRUE(job.all_arrived());
  ASSERT_EQ(kill(job.launcher(), SIGUSR1), 0);
  for (int i = 0; i < 100 && !contains(job.err(), "SIGUSR1: the ranks"); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  CommandResult result = job.release_and_wait();
  expect_correct(result, 2);
  EXPECT_TRUE(contains(result.err, "SIGUSR1: the ranks dump no flight recorder")) << result.err;
  EXPECT_TRUE(dumps_of(result.err, 0).empty()) << result.err;
}

// Whether `pid` has `sig` blocked (SigBlk of /proc/<pid>/status): the launcher blocks what it
// reads from its signalfd, so a signal sent from then on is its to handle.
bool blocks_signal(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) {
      return ((std::strtoull(line.c_str() + 7, nullptr, 16) >> (sig - 1)) & 1ULL) != 0;
    }
  }
  return false;
}

// Ranks that do not catch the signal (here a shell that never creates a context) would be
// killed by it: the launcher leaves them out, says so, and the job ends normally.
TEST(FlightSignalLauncher, RanksThatDoNotHandleTheSignalAreSpared) {
  Command job({launcher_path(), "-n", "2", "--", "sh", "-c", "sleep 1.5; echo finished"});
  for (int i = 0; i < 250 && !blocks_signal(job.pid(), SIGUSR1); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(blocks_signal(job.pid(), SIGUSR1));
  std::this_thread::sleep_for(milliseconds(300));  // the ranks run their shell by now
  ASSERT_EQ(kill(job.pid(), SIGUSR1), 0);
  CommandResult result = job.wait(kBound);
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_TRUE(contains(result.out, "[0] finished") && contains(result.out, "[1] finished"))
      << result.out;
  EXPECT_TRUE(contains(result.err, "do not handle SIGUSR1")) << result.err;
}

TEST(FlightSignalKnob, ParsesNamesAndNumbers) {
  EXPECT_EQ(parse_flight_signal(""), 0);
  EXPECT_EQ(parse_flight_signal("off"), 0);
  EXPECT_EQ(parse_flight_signal("OFF"), 0);
  EXPECT_EQ(parse_flight_signal("USR1"), SIGUSR1);
  EXPECT_EQ(parse_flight_signal("sigusr1"), SIGUSR1);
  EXPECT_EQ(parse_flight_signal("SIGUSR2"), SIGUSR2);
  EXPECT_EQ(parse_flight_signal(std::to_string(SIGUSR2)), SIGUSR2);
  EXPECT_EQ(parse_flight_signal("RTMIN+2"), SIGRTMIN + 2);
  EXPECT_EQ(parse_flight_signal(std::to_string(SIGRTMAX)), SIGRTMAX);
  for (const char* bad : {"KILL", "SIGSTOP", "9", "11", "-10", "USR3", "RTMIN+99", "10 ", "1e1"}) {
    try {
      parse_flight_signal(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      std::string text = e.what();
      EXPECT_TRUE(contains(text, std::string("GLOO_LITE_FLIGHT_SIGNAL='") + bad + "'")) << text;
      EXPECT_TRUE(contains(text, "allowed: empty or off")) << text;
    }
  }
}

TEST(FlightSignalKnob, BadValueFailsAtStart) {
  TempDir dir;
  // Under the launcher, which checks the knobs before starting anything...
  CommandResult launched =
      run_command({launcher_path(), "-n", "2", "--", FLIGHT_RANK_PATH, dir.path(), "1", "0", "1"},
                  kBound, {"GLOO_LITE_FLIGHT_SIGNAL=SEGV"});
  EXPECT_NE(launched.exit_code, 0) << launched.describe();
  EXPECT_TRUE(contains(launched.err, "GLOO_LITE_FLIGHT_SIGNAL='SEGV'")) << launched.err;
  EXPECT_TRUE(contains(launched.err, "USR1")) << launched.err;
  // ...and a rank started without it, at its first context.
  CommandResult alone = run_command({FLIGHT_RANK_PATH, dir.path(), "1", "0", "1"}, kBound,
                                    {"GLOO_LITE_FLIGHT_SIGNAL=sigusr9", "GLOO_LITE_RANK=0",
                                     "GLOO_LITE_SIZE=1", "GLOO_LITE_STORE=file://" + dir.path()});
  EXPECT_NE(alone.exit_code, 0) << alone.describe();
  EXPECT_TRUE(contains(alone.err, "GLOO_LITE_FLIGHT_SIGNAL='sigusr9'")) << alone.err;
  EXPECT_FALSE(contains(alone.err, "allreduces correct")) << alone.err;
}

}  // namespace
}  // namespace gloo_lite::test
