// gloo_lite_run as a user runs it: exit statuses, tagged output, the rank environment, stopping
// the other ranks, signals.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "test/launcher/command.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const milliseconds kBound = seconds(20);

std::vector<std::string> launch(std::vector<std::string> args) {
  args.insert(args.begin(), launcher_path());
  return args;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Shell code that writes the shell's pid to DIR/pid.RANK atomically (so that a waiting test
// never reads a half-written file).
std::string record_pid(const std::string& dir) {
  std::string file = dir + "/pid.$GLOO_LITE_RANK";
  return "echo $$ > " + file + ".tmp && mv " + file + ".tmp " + file + "; ";
}

pid_t recorded_pid(const std::string& dir, int rank) {
  return std::atoi(read_file(dir + "/pid." + std::to_string(rank)).c_str());
}

TEST(LauncherRun, HelpPrintsUsage) {
  CommandResult result = run_command(launch({"--help"}), kBound);
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_TRUE(contains(result.out, "Usage: gloo_lite_run -n N")) << result.out;
}

TEST(LauncherRun, KnobsListsEveryKnob) {
  CommandResult result = run_command(launch({"--knobs"}), kBound);
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_TRUE(contains(result.out, "GLOO_LITE_IFNAME")) << result.out;
  EXPECT_TRUE(contains(result.out, "GLOO_LITE_TIMEOUT_MS  (default: 300000)")) << result.out;
}

TEST(LauncherRun, BadCommandLineExits2) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--", "true"}, {"-n", "2"}, {"-n", "zero", "true"}, {"--bogus", "-n", "1", "true"}}) {
    CommandResult result = run_command(launch(args), kBound);
    EXPECT_EQ(result.exit_code, 2) << result.describe();
    EXPECT_TRUE(contains(result.err, "--help")) << result.err;
  }
}

TEST(LauncherRun, MissingProgramExits127) {
  CommandResult result = run_command(launch({"-n", "2", "--", "no-such-program-xyz"}), kBound);
  EXPECT_EQ(result.exit_code, 127) << result.describe();
  EXPECT_TRUE(contains(result.err, "no-such-program-xyz: command not found")) << result.err;
}

TEST(LauncherRun, AllRanksSucceed) {
  CommandResult result = run_command(launch({"-n", "4", "--", "/bin/true"}), kBound);
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_EQ(result.err, "");
}

TEST(LauncherRun, SetsTheRankEnvironment) {
  CommandResult result = run_command(
      launch({"-n", "3", "--", "/bin/sh", "-c",
              "echo \"$GLOO_LITE_RANK $GLOO_LITE_SIZE $GLOO_LITE_LOCAL_RANK $GLOO_LITE_STORE "
              "$GLOO_LITE_PREFIX\""}),
      kBound, {"GLOO_LITE_RANK=99", "GLOO_LITE_PREFIX=stale"});
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  std::vector<std::string> lines = split_lines(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out;
  std::set<std::string> stores, prefixes;
  std::set<int> ranks;
  for (const auto& line : lines) {
    char store[256] = {0}, prefix[256] = {0};
    int tag = -1, rank = -1, size = -1, local = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "[%d] %d %d %d %255s %255s", &tag, &rank, &size, &local,
                          store, prefix),
              6)
        << line;
    EXPECT_EQ(tag, rank) << line;
    EXPECT_EQ(size, 3) << line;
    EXPECT_EQ(local, rank) << line;
    ranks.insert(rank);
    stores.insert(store);
    prefixes.insert(prefix);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(stores.begin()->rfind("tcp://127.0.0.1:", 0), 0u) << *stores.begin();
  ASSERT_EQ(prefixes.size(), 1u);
  EXPECT_NE(*prefixes.begin(), "stale");

  // A second job gets a different prefix, so stale keys of the first never collide.
  CommandResult again =
      run_command(launch({"-n", "1", "--", "/bin/sh", "-c", "echo \"$GLOO_LITE_PREFIX\""}), kBound);
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_NE(again.out, "[0] " + *prefixes.begin() + "\n");
}

TEST(LauncherRun, NoPrefixKeepsTheCallersPrefix) {
  CommandResult result = run_command(
      launch({"--no-prefix", "-n", "2", "--", "/bin/sh", "-c", "echo \"p=$GLOO_LITE_PREFIX\""}),
      kBound, {"GLOO_LITE_PREFIX=mine"});
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_TRUE(contains(result.out, "[0] p=mine\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "[1] p=mine\n")) << result.out;
}

TEST(LauncherRun, KeepsRanksOnLoopbackUnlessTold) {
  std::vector<std::string> args =
      launch({"-n", "1", "--", "/bin/sh", "-c", "echo \"h=$GLOO_LITE_HOSTNAME\""});
  CommandResult plain = run_command(args, kBound, {"GLOO_LITE_HOSTNAME=", "GLOO_LITE_IFNAME="});
  EXPECT_EQ(plain.out, "[0] h=127.0.0.1\n") << plain.describe();
  CommandResult chosen = run_command(args, kBound, {"GLOO_LITE_HOSTNAME=", "GLOO_LITE_IFNAME=eth"});
  EXPECT_EQ(chosen.out, "[0] h=\n") << chosen.describe();
  CommandResult named = run_command(args, kBound, {"GLOO_LITE_HOSTNAME=::1"});
  EXPECT_EQ(named.out, "[0] h=::1\n") << named.describe();
}

TEST(LauncherRun, TagsStdoutAndStderrLinesAndFlushesPartialLines) {
  CommandResult result =
      run_command(launch({"-n", "2", "--", "/bin/sh", "-c",
                          "printf 'one\\ntwo\\n'; printf 'oops\\n' >&2; printf 'no newline'"}),
                  kBound);
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_EQ(split_lines(result.out).size(), 6u) << result.out;
  for (int rank = 0; rank < 2; ++rank) {
    // Ranks interleave by whole lines; each rank's own lines keep their order.
    std::string tag = "[" + std::to_string(rank) + "] ";
    std::string own;
    for (const auto& line : split_lines(result.out)) {
      if (line.rfind(tag, 0) == 0) own += line + "\n";
    }
    EXPECT_EQ(own, tag + "one\n" + tag + "two\n" + tag + "no newline\n") << result.out;
    EXPECT_TRUE(contains(result.err, tag + "oops\n")) << result.err;
  }
}

TEST(LauncherRun, ConcurrentLinesNeverInterleave) {
  const int ranks = 4, count = 300, length = 3000;
  CommandResult result =
      run_command(launch({"-n", std::to_string(ranks), "--", self_path(), "--rank-helper", "lines",
                          std::to_string(count), std::to_string(length)}),
                  kBound);
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  for (const auto* stream : {&result.out, &result.err}) {
    char base = stream == &result.out ? 'a' : 'A';
    std::map<int, int> per_rank;
    for (const auto& line : split_lines(*stream)) {
      int rank = -1;
      ASSERT_EQ(std::sscanf(line.c_str(), "[%d] ", &rank), 1) << line.substr(0, 80);
      std::string tag = "[" + std::to_string(rank) + "] ";
      ASSERT_EQ(line, tag + std::string(length, static_cast<char>(base + rank)))
          << "line mixes ranks: " << line.substr(0, 80);
      ++per_rank[rank];
    }
    for (int rank = 0; rank < ranks; ++rank) EXPECT_EQ(per_rank[rank], count) << rank;
  }
}

TEST(LauncherRun, RankZeroReadsStandardInput) {
  CommandResult result =
      run_command(launch({"-n", "2", "--", "/bin/cat"}), kBound, {}, "hello\nworld\n");
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_EQ(result.out, "[0] hello\n[0] world\n");
}

TEST(LauncherRun, FailingRankStopsTheOthersAndSetsTheExitStatus) {
  TempDir dir;
  CommandResult result = run_command(
      launch({"-n", "3", "--", "/bin/sh", "-c",
              record_pid(dir.path()) + "if [ \"$GLOO_LITE_RANK\" = 1 ]; then until [ -f " +
                  dir.path() + "/pid.0 ] && [ -f " + dir.path() +
                  "/pid.2 ]; do sleep 0.05; done; exit 7; fi; exec sleep 30"}),
      kBound);
  EXPECT_EQ(result.exit_code, 7) << result.describe();
  EXPECT_LT(result.elapsed, seconds(10)) << result.describe();
  EXPECT_TRUE(contains(result.err, "gloo_lite_run: rank 1 ")) << result.err;
  EXPECT_TRUE(contains(result.err, "exited with status 7")) << result.err;
  EXPECT_EQ(split_lines(result.err).size(), 1u) << "one summary line: " << result.err;
  for (int rank : {0, 2}) {
    pid_t pid = recorded_pid(dir.path(), rank);
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(wait_process_gone(pid, seconds(5))) << "rank " << rank << " still runs";
  }
}

TEST(LauncherRun, StoppingARankStopsWhatItStarted) {
  TempDir dir;
  // Rank 0's shell waits on a background sleep: signalling only the shell would leave the sleep
  // (and the pipe it holds) behind; the launcher signals the rank's process group.
  CommandResult result = run_command(
      launch({"-n", "2", "--", "/bin/sh", "-c",
              // Rank 1 exits once rank 0 has started its child (a fixed 0.2 s raced a slow rank 0).
              "if [ \"$GLOO_LITE_RANK\" = 1 ]; then until [ -s " + dir.path() +
                  "/child ]; do sleep 0.02; done; exit 3; fi; sleep 30 & echo $! > " + dir.path() +
                  "/child; wait"}),
      kBound);
  EXPECT_EQ(result.exit_code, 3) << result.describe();
  EXPECT_LT(result.elapsed, seconds(10)) << result.describe();
  pid_t child = std::atoi(read_file(dir.path() + "/child").c_str());
  ASSERT_GT(child, 0);
  EXPECT_TRUE(wait_process_gone(child, seconds(5)));
}

TEST(LauncherRun, RankKilledBySignalGives128PlusSignal) {
  CommandResult result =
      run_command(launch({"-n", "2", "--", "/bin/sh", "-c",
                          "if [ \"$GLOO_LITE_RANK\" = 0 ]; then kill -USR1 $$; fi; exec sleep 30"}),
                  kBound);
  EXPECT_EQ(result.exit_code, 128 + SIGUSR1) << result.describe();
  EXPECT_TRUE(contains(result.err, "rank 0 ")) << result.err;
  EXPECT_TRUE(contains(result.err, "SIGUSR1")) << result.err;
  EXPECT_LT(result.elapsed, seconds(10));

  CommandResult killed =
      run_command(launch({"-n", "1", "--", "/bin/sh", "-c", "kill -KILL $$"}), kBound);
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL) << killed.describe();
}

TEST(LauncherRun, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  CommandResult result = run_command(
      launch({"--grace", "0.3", "-n", "3", "--", "/bin/sh", "-c",
              "trap '' TERM; if [ \"$GLOO_LITE_RANK\" = 2 ]; then sleep 0.2; exit 5; fi; "
              "exec sleep 30"}),
      kBound);
  EXPECT_EQ(result.exit_code, 5) << result.describe();
  EXPECT_LT(result.elapsed, seconds(10)) << result.describe();
}

TEST(LauncherRun, TimeoutStopsTheJob) {
  CommandResult result =
      run_command(launch({"--timeout", "0.5", "-n", "2", "--", "/bin/sleep", "30"}), kBound);
  EXPECT_EQ(result.exit_code, 124) << result.describe();
  EXPECT_TRUE(contains(result.err, "--timeout")) << result.err;
  EXPECT_LT(result.elapsed, seconds(10));
}

void expect_forwarded(int sig) {
  TempDir dir;
  Command command(
      launch({"-n", "2", "--", "/bin/sh", "-c", record_pid(dir.path()) + "exec sleep 30"}));
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(wait_file(dir.path() + "/pid." + std::to_string(rank), seconds(10)));
  }
  ASSERT_EQ(kill(command.pid(), sig), 0);
  CommandResult result = command.wait(kBound);
  EXPECT_EQ(result.exit_code, 128 + sig) << result.describe();
  EXPECT_TRUE(contains(result.err, "interrupted by")) << result.err;
  EXPECT_LT(result.elapsed, seconds(10)) << result.describe();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(wait_process_gone(recorded_pid(dir.path(), rank), seconds(5))) << "rank " << rank;
  }
}

TEST(LauncherRun, ForwardsSigterm) { expect_forwarded(SIGTERM); }
TEST(LauncherRun, ForwardsSigint) { expect_forwarded(SIGINT); }

TEST(LauncherRun, RanksDieWithAKilledLauncher) {
  TempDir dir;
  Command command(
      launch({"-n", "2", "--", "/bin/sh", "-c", record_pid(dir.path()) + "exec sleep 30"}));
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(wait_file(dir.path() + "/pid." + std::to_string(rank), seconds(10)));
  }
  ASSERT_EQ(kill(command.pid(), SIGKILL), 0);
  command.wait(kBound);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(wait_process_gone(recorded_pid(dir.path(), rank), seconds(5))) << "rank " << rank;
  }
}

// The whole path: gloo_lite_run's store and environment, init_from_env, a TCP mesh.
TEST(LauncherRun, RanksBootstrapFromTheLauncherEnvironment) {
  CommandResult result =
      run_command(launch({"-n", "4", "--", self_path(), "--rank-helper", "bootstrap"}), kBound,
                  {"GLOO_LITE_HOSTNAME=", "GLOO_LITE_IFNAME=", "GLOO_LITE_TIMEOUT_MS=15000"});
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  for (int rank = 0; rank < 4; ++rank) {
    int left = (rank + 3) % 4;
    std::string expected = "[" + std::to_string(rank) + "] rank " + std::to_string(rank) +
                           " of 4 received " + std::to_string(1000 + left) + " from rank " +
                           std::to_string(left) + "\n";
    EXPECT_TRUE(contains(result.out, expected)) << result.out;
  }
}

}  // namespace
}  // namespace gloo_lite::test
