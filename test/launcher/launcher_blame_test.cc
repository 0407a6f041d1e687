// Naming the culprit of a failed job: failure reports (format, store round trip, garbage),
// process states, the summary clause, and gloo_lite_run end to end with a stopped rank.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/failure_report.h"
#include "rendezvous/stores.h"
#include "test/launcher/command.h"
#include "test/support/test_support.h"
#include "tools/launcher_blame.h"

namespace gloo_lite::test {
namespace {

using launcher::blame_clause;
using launcher::BlameEvidence;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Deadline soon() { return Deadline::after(seconds(5)); }

TEST(FailureReport, EncodesTheDocumentedFormat) {
  EXPECT_EQ(encode_failure_report({1, {2}, "timeout in allreduce"}),
            "GLFR1 1 2 timeout in allreduce");
  EXPECT_EQ(encode_failure_report({0, {}, "x"}), "GLFR1 0 - x");
  EXPECT_EQ(encode_failure_report({3, {0, 5}, ""}), "GLFR1 3 0,5 ");
}

TEST(FailureReport, RoundTripsThroughTheStore) {
  auto store = make_hash_store();
  publish_failure_report(*store, 1, {2, 3}, "rank 2 never sent\nsecond line", soon());
  publish_failure_report(*store, 3, {}, "no culprit", soon());
  std::vector<FailureReport> reports = read_failure_reports(*store, 4, soon());
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].rank, 1);
  EXPECT_EQ(reports[0].culprits, (std::vector<int>{2, 3}));
  EXPECT_EQ(reports[0].message, "rank 2 never sent\nsecond line");
  EXPECT_EQ(reports[1].rank, 3);
  EXPECT_TRUE(reports[1].culprits.empty());
  EXPECT_EQ(to_string(store->get("gloo_lite/failure/3", soon())), "GLFR1 3 - no culprit");
}

TEST(FailureReport, CutsLongMessages) {
  auto store = make_hash_store();
  publish_failure_report(*store, 0, {1}, std::string(100000, 'm'), soon());
  auto reports = read_failure_reports(*store, 2, soon());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].message.size(), kMaxFailureMessageBytes);
}

TEST(FailureReport, GarbageIsRejectedNotBelieved) {
  for (const std::string& value :
       {std::string(""), std::string("GLFR1"), std::string("GLFR1 "), std::string("GLFR1 1"),
        std::string("GLFR1 1 2"), std::string("GLFR2 1 2 m"), std::string("GLFR1 -1 2 m"),
        std::string("GLFR1 4 2 m"), std::string("GLFR1 1 9 m"), std::string("GLFR1 1 -2 m"),
        std::string("GLFR1 1 2,,3 m"), std::string("GLFR1 1 , m"), std::string("GLFR1 x 2 m"),
        std::string("GLFR1 99999999999999999999 2 m"), std::string("GLFR1 1 +2 m"),
        std::string("GLFR1  2 m"), std::string("glfr1 1 2 m")}) {
    EXPECT_FALSE(decode_failure_report(value, 4).has_value()) << "'" << value << "'";
  }
  // Random bytes, and every prefix of a valid report, must never crash the decoder; only the
  // whole report (or a prefix that keeps its three fields) decodes.
  std::mt19937 random(9);
  for (int i = 0; i < 2000; ++i) {
    std::string value(random() % 40, '\0');
    for (char& c : value) c = static_cast<char>(random() % 256);
    if (i % 2 == 0) value = "GLFR1 " + value;
    auto report = decode_failure_report(value, 8);
    if (report) {
      EXPECT_GE(report->rank, 0);
      EXPECT_LT(report->rank, 8);
      for (int culprit : report->culprits) EXPECT_LT(culprit, 8);
    }
  }
  std::string valid = encode_failure_report({2, {0, 1}, "message"});
  for (size_t length = 0; length < valid.size(); ++length) {
    auto report = decode_failure_report(valid.substr(0, length), 4);
    EXPECT_EQ(report.has_value(), length >= std::string("GLFR1 2 0,1 ").size()) << length;
  }
}

TEST(FailureReport, AReportUnderAnotherRanksKeyIsIgnored) {
  auto store = make_hash_store();
  store->set(failure_report_key(0), to_bytes("GLFR1 1 2 forged"));
  store->set(failure_report_key(1), to_bytes("not a report"));
  EXPECT_TRUE(read_failure_reports(*store, 3, soon()).empty());
}

// A store whose every operation fails, as a dead store would.
class BrokenStore : public Store {
 public:
  void set(const std::string&, const Bytes&, const Deadline&) override {
    throw StoreError("broken");
  }
  Bytes get(const std::string&, const Deadline&) override { throw StoreError("broken"); }
  void wait(const std::vector<std::string>&, const Deadline&) override {
    throw StoreError("broken");
  }
  int64_t add(const std::string&, int64_t, const Deadline&) override { throw StoreError("broken"); }
  bool check(const std::vector<std::string>&, const Deadline&) override {
    throw StoreError("broken");
  }
  bool erase(const std::string&, const Deadline&) override { throw StoreError("broken"); }
  std::string describe() const override { return "broken://"; }
};

TEST(FailureReport, PublishingAndReadingNeverThrow) {
  BrokenStore store;
  EXPECT_NO_THROW(publish_failure_report(store, 0, {1}, "m", soon()));
  EXPECT_NO_THROW(EXPECT_TRUE(read_failure_reports(store, 4, soon()).empty()));
  // Past its deadline, publishing does not even try.
  auto hash = make_hash_store();
  publish_failure_report(*hash, 0, {1}, "late", Deadline::after(milliseconds(0)));
  EXPECT_FALSE(hash->check({failure_report_key(0)}));
}

TEST(ProcessState, SeesAStoppedProcessGroup) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setpgid(0, 0);
    for (;;) pause();
  }
  setpgid(child, child);
  // Until the child runs, its state is S (or R): not a suspect.
  EXPECT_FALSE(launcher::state_is_suspect(launcher::process_group_state(child)));
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  EXPECT_EQ(launcher::process_group_state(child), 'T');
  EXPECT_TRUE(launcher::state_is_suspect('T'));
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  EXPECT_EQ(launcher::process_group_state(child), 0);
}

TEST(BlameClause, NamesAStoppedRank) {
  BlameEvidence evidence;
  evidence.suspects = {{2, 'T'}};
  EXPECT_EQ(blame_clause(1, evidence),
            "likely culprit: rank 2, stopped (process state T: SIGSTOP?) when rank 1 failed; "
            "rank 1 failed waiting for it");
}

TEST(BlameClause, ProcessStatesWinAndReportsCorroborate) {
  BlameEvidence evidence;
  evidence.suspects = {{2, 'T'}};
  evidence.reports = {
      {0, {1}, "connection closed by rank 1"}, {1, {2}, "timeout"}, {3, {2}, "timeout"}};
  EXPECT_EQ(blame_clause(1, evidence),
            "likely culprit: rank 2, stopped (process state T: SIGSTOP?) when rank 1 failed, "
            "named by the failure reports of ranks 1, 3; ranks 0, 1, 3 failed waiting for it");
}

TEST(BlameClause, RanksThatFailedOnTheirOwnWaitedToo) {
  BlameEvidence evidence;
  evidence.suspects = {{2, 'T'}};
  evidence.failed = {3, 0, 1};
  EXPECT_EQ(blame_clause(3, evidence),
            "likely culprit: rank 2, stopped (process state T: SIGSTOP?) when rank 3 failed; "
            "ranks 0, 1, 3 failed waiting for it");
}

TEST(BlameClause, AStoppedRankThatReportedItsOwnFailureIsNoCulprit) {
  // Rank 1 is caught in a traced stop after its own error (a sanitizer's leak check at exit
  // looks like that): only rank 2 is stuck.
  BlameEvidence evidence;
  evidence.suspects = {{1, 't'}, {2, 'T'}};
  evidence.reports = {{0, {2}, "timeout"}, {1, {2}, "timeout"}, {3, {2}, "timeout"}};
  EXPECT_EQ(blame_clause(0, evidence),
            "likely culprit: rank 2, stopped (process state T: SIGSTOP?) when rank 0 failed, "
            "named by the failure reports of ranks 0, 1, 3; ranks 0, 1, 3 failed waiting for it");
}

TEST(BlameClause, ReportsAloneNameTheMostNamedRank) {
  BlameEvidence evidence;
  evidence.reports = {{0, {1}, "closed"}, {1, {3}, "timeout"}, {2, {3}, "timeout"}};
  EXPECT_EQ(blame_clause(0, evidence),
            "likely culprit: rank 3, named by the failure reports of ranks 1, 2; ranks 0, 1, 2 "
            "failed waiting for it");
}

TEST(BlameClause, NothingToSayGivesNothing) {
  EXPECT_EQ(blame_clause(1, BlameEvidence{}), "");
  BlameEvidence no_culprits;
  no_culprits.reports = {{1, {}, "bad argument"}};
  EXPECT_EQ(blame_clause(1, no_culprits), "");
}

TEST(BlameClause, WithoutAFailedRank) {
  BlameEvidence evidence;
  evidence.suspects = {{0, 'D'}};
  EXPECT_EQ(blame_clause(-1, evidence),
            "likely culprit: rank 0, stuck in the kernel (process state D: disk, NFS?) when the "
            "job was stopped");
}

std::vector<std::string> launch(std::vector<std::string> args) {
  args.insert(args.begin(), launcher_path());
  return args;
}

// The rank named in "gloo_lite_run: rank N (pid ...": the first failing rank.
int summary_rank(const std::string& err) {
  size_t at = err.find("gloo_lite_run: rank ");
  if (at == std::string::npos) return -1;
  return std::atoi(err.c_str() + at + std::string("gloo_lite_run: rank ").size());
}

std::string summary_line(const std::string& err) {
  size_t at = err.find("gloo_lite_run: ");
  if (at == std::string::npos) return "";
  return err.substr(at, err.find('\n', at) - at);
}

// Issue 9: with rank 2 stopped, the launcher blamed whichever rank timed out first.
TEST(LauncherBlame, AStoppedRankIsNamedAsTheCulprit) {
  TempDir dir;
  Command command(launch({"--grace", "2", "-n", "4", "--", self_path(), "--rank-helper",
                          "allreduce-loop", dir.path()}),
                  {"GLOO_LITE_HOSTNAME=", "GLOO_LITE_IFNAME=", "GLOO_LITE_TIMEOUT_MS=1500"});
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_TRUE(wait_file(dir.path() + "/pid." + std::to_string(rank), seconds(20)));
  }
  pid_t stopped = std::atoi(read_file(dir.path() + "/pid.2").c_str());
  ASSERT_GT(stopped, 0);
  ASSERT_EQ(kill(stopped, SIGSTOP), 0);
  CommandResult result = command.wait(seconds(30));
  ASSERT_FALSE(result.timed_out) << result.describe();
  EXPECT_NE(result.exit_code, 0) << result.describe();
  std::string summary = summary_line(result.err);
  int first = summary_rank(result.err);
  EXPECT_GE(first, 0) << summary;
  EXPECT_NE(first, 2) << summary;
  EXPECT_TRUE(contains(summary,
                       "the first to fail; likely culprit: rank 2, stopped (process "
                       "state T: SIGSTOP?) when rank " +
                           std::to_string(first) + " failed"))
      << result.err;
  EXPECT_TRUE(contains(summary, "failed waiting for it")) << summary;
  // The stopped rank is woken into its SIGTERM rather than left for SIGKILL after the grace.
  EXPECT_TRUE(wait_process_gone(stopped, seconds(5)));
  EXPECT_LT(result.elapsed, seconds(25)) << result.describe();
}

TEST(LauncherBlame, AFailureReportNamesTheCulprit) {
  CommandResult result =
      run_command(launch({"-n", "3", "--", self_path(), "--rank-helper", "report", "1", "0", "3"}),
                  seconds(20));
  EXPECT_EQ(result.exit_code, 3) << result.describe();
  EXPECT_TRUE(contains(summary_line(result.err), "gloo_lite_run: rank 1 (pid ")) << result.err;
  EXPECT_TRUE(contains(summary_line(result.err),
                       "exited with status 3, the first to fail; likely culprit: rank 0, named "
                       "by the failure report of rank 1; rank 1 failed waiting for it; "))
      << result.err;
}

TEST(LauncherBlame, AReportWithoutCulpritsKeepsThePlainSummary) {
  CommandResult result =
      run_command(launch({"-n", "2", "--", self_path(), "--rank-helper", "report", "0", "-", "4"}),
                  seconds(20));
  EXPECT_EQ(result.exit_code, 4) << result.describe();
  std::string summary = summary_line(result.err);
  EXPECT_TRUE(contains(summary, "rank 0 (pid ")) << summary;
  EXPECT_FALSE(contains(summary, "culprit")) << summary;
}

}  // namespace
}  // namespace gloo_lite::test
