// Knob validation (issue 9): every knob's rule, the typed readers, GLOO_LITE_ALGO against the
// registry, typo warnings, and the start-up check in gloo_lite_run, init_from_env and
// gloo_lite_bench.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/knobs.h"
#include "test/launcher/command.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Sets variables for one test and restores what was there before.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (auto [name, value] : values) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    for (auto& [name, old] : saved_) {
      if (old) {
        setenv(name.c_str(), old->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The InvalidArgument message validate_knobs() gives with NAME=VALUE set; "" when it accepts.
std::string rejection(const char* name, const char* value) {
  ScopedEnv env{{name, value}};
  try {
    validate_knobs();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Knobs, EveryDefaultSatisfiesItsOwnRule) {
  for (const auto& knob : gloo_lite_knobs()) {
    if (*knob.default_value == '\0') continue;
    EXPECT_NO_THROW(check_knob_value(knob, knob.default_value)) << knob.name;
  }
}

TEST(Knobs, TimeoutOutOfRangeFailsNamingKnobValueAndRange) {
  for (const char* bad : {"0", "-5", "10000000000000", "99999999999999999999", "5s", "abc"}) {
    std::string message = rejection("GLOO_LITE_TIMEOUT_MS", bad);
    EXPECT_TRUE(contains(message, std::string("GLOO_LITE_TIMEOUT_MS='") + bad + "'")) << message;
    EXPECT_TRUE(contains(message, "milliseconds in 1..2592000000")) << message;
  }
  for (const char* good : {"1", "5000", "2592000000"}) {
    EXPECT_EQ(rejection("GLOO_LITE_TIMEOUT_MS", good), "") << good;
  }
}

TEST(Knobs, TypedReadersCheckTheRuleToo) {
  {
    ScopedEnv env{{"GLOO_LITE_TIMEOUT_MS", "-5"}};
    EXPECT_THROW(knob_ms("GLOO_LITE_TIMEOUT_MS"), InvalidArgument);
  }
  {
    ScopedEnv env{{"GLOO_LITE_TIMEOUT_MS", "1234"}};
    EXPECT_EQ(knob_ms("GLOO_LITE_TIMEOUT_MS").count(), 1234);
  }
  {
    ScopedEnv env{{"GLOO_LITE_TCP_EAGER_BYTES", "-1"}};
    EXPECT_THROW(knob_int("GLOO_LITE_TCP_EAGER_BYTES"), InvalidArgument);
  }
  {
    ScopedEnv env{{"GLOO_LITE_TCP_EAGER_BYTES", "64K"}};
    EXPECT_EQ(knob_int("GLOO_LITE_TCP_EAGER_BYTES"), 65536);
  }
  {
    ScopedEnv env{{"GLOO_LITE_CHECK", "yes"}};
    EXPECT_TRUE(knob_bool("GLOO_LITE_CHECK"));
  }
  {
    ScopedEnv env{{"GLOO_LITE_CHECK", "off"}};
    EXPECT_FALSE(knob_bool("GLOO_LITE_CHECK"));
  }
  {
    ScopedEnv env{{"GLOO_LITE_CHECK", "maybe"}};
    EXPECT_THROW(knob_bool("GLOO_LITE_CHECK"), InvalidArgument);
  }
  {
    ScopedEnv env{{"GLOO_LITE_BETA_GBPS", "0"}};
    EXPECT_THROW(knob_double("GLOO_LITE_BETA_GBPS"), InvalidArgument);
  }
}

TEST(Knobs, NegativeAndOverflowingByteSizesFail) {
  for (const char* bad : {"-1", "-64K", " 5", "+5", "1T", "2G", "99999999999999999999"}) {
    std::string message = rejection("GLOO_LITE_TCP_EAGER_BYTES", bad);
    EXPECT_TRUE(contains(message, std::string("GLOO_LITE_TCP_EAGER_BYTES='") + bad + "'"))
        << bad << ": " << message;
    EXPECT_TRUE(contains(message, "bytes in 0..1G")) << message;
  }
  for (const char* good : {"0", "4096", "64K", "1M", "1G"}) {
    EXPECT_EQ(rejection("GLOO_LITE_TCP_EAGER_BYTES", good), "") << good;
  }
  EXPECT_NE(rejection("GLOO_LITE_IB_PINNED_BYTES", "-1"), "");
  EXPECT_EQ(rejection("GLOO_LITE_IB_PINNED_BYTES", "16G"), "");
}

TEST(Knobs, ParseBytesRejectsWhatStrtoullWouldWrap) {
  EXPECT_EQ(parse_bytes("8M", "-b"), 8u << 20);
  EXPECT_EQ(parse_bytes("0", "-b"), 0u);
  for (const char* bad : {"-5", "-0", " 7", "", "K", "17179869184G", "18446744073709551616"}) {
    EXPECT_THROW(parse_bytes(bad, "-b"), InvalidArgument) << "'" << bad << "'";
  }
}

TEST(Knobs, WordsAndNumbersAndSwitches) {
  std::string message = rejection("GLOO_LITE_LOG", "verbose");
  EXPECT_TRUE(contains(message, "GLOO_LITE_LOG='verbose'")) << message;
  EXPECT_TRUE(contains(message, "one of error, warn, info, debug, trace")) << message;
  EXPECT_EQ(rejection("GLOO_LITE_LOG", "debug"), "");
  message = rejection("GLOO_LITE_LOG_SUBSYS", "store,tcpp");
  EXPECT_TRUE(contains(message, "unknown entry 'tcpp'")) << message;
  EXPECT_EQ(rejection("GLOO_LITE_LOG_SUBSYS", "store,tcp,launcher"), "");
  EXPECT_NE(rejection("GLOO_LITE_TRANSPORT", "udp"), "");
  EXPECT_NE(rejection("GLOO_LITE_SIMD", "avx512"), "");
  EXPECT_NE(rejection("GLOO_LITE_CHECK", "2"), "");
  EXPECT_EQ(rejection("GLOO_LITE_CHECK", "1"), "");
  for (const char* bad : {"0", "-1", "abc", "nan", "inf", "1e9"}) {
    EXPECT_NE(rejection("GLOO_LITE_BETA_GBPS", bad), "") << bad;
  }
  EXPECT_EQ(rejection("GLOO_LITE_BETA_GBPS", "2.5"), "");
  EXPECT_NE(rejection("GLOO_LITE_IB_RETRY_COUNT", "8"), "");
  EXPECT_EQ(rejection("GLOO_LITE_IB_GID_INDEX", "-1"), "");
  EXPECT_NE(rejection("GLOO_LITE_IB_GID_INDEX", "-2"), "");
}

TEST(Knobs, UnknownAlgorithmListsTheValidNames) {
  std::string message = rejection("GLOO_LITE_ALGO", "allreduce:rnig");
  EXPECT_TRUE(contains(message, "GLOO_LITE_ALGO='allreduce:rnig'")) << message;
  EXPECT_TRUE(contains(message, "allreduce has no algorithm named 'rnig'")) << message;
  EXPECT_TRUE(contains(message, "allreduce offers: auto, ring, ")) << message;
  message = rejection("GLOO_LITE_ALGO", "allredcue:ring");
  EXPECT_TRUE(contains(message, "no collective named 'allredcue'")) << message;
  EXPECT_TRUE(contains(message, "broadcast: auto, ")) << message;
  message = rejection("GLOO_LITE_ALGO", "rnig");
  EXPECT_TRUE(contains(message, "no collective has an algorithm named 'rnig'")) << message;
  EXPECT_NE(rejection("GLOO_LITE_ALGO", "allreduce:ring;broadcast:"), "");
  EXPECT_NE(rejection("GLOO_LITE_ALGO", "allreduce:ring,reduce:ring"), "");  // reduce: tree only
}

TEST(Knobs, ValidAlgorithmChoicesStillWork) {
  for (const char* good :
       {"allreduce:ring;broadcast:tree", "allreduce:ring,broadcast:tree", "ring", "auto",
        "allreduce:auto", "tree", "barrier:dissemination", "allreduce:halving_doubling;"}) {
    EXPECT_EQ(rejection("GLOO_LITE_ALGO", good), "") << good;
  }
}

TEST(Knobs, UnknownVariableWarnsOnceNamingTheClosestKnob) {
  EXPECT_STREQ(closest_knob("GLOO_LITE_TIMEOUTMS").name, "GLOO_LITE_TIMEOUT_MS");
  EXPECT_STREQ(closest_knob("GLOO_LITE_ALOG").name, "GLOO_LITE_ALGO");
  EXPECT_STREQ(closest_knob("GLOO_LITE_IFACE").name, "GLOO_LITE_IFNAME");
  ScopedEnv env{{"GLOO_LITE_TIMEOUTMS", "5000"},
                {"GLOO_LITE_TEST_SOMETHING", "1"},
                {"GLOO_LITE_LOG", "warn"}};
  testing::internal::CaptureStderr();
  validate_knobs();
  validate_knobs();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "GLOO_LITE_TIMEOUTMS is set but is not a gloo_lite knob")) << err;
  EXPECT_TRUE(contains(err, "closest knob: GLOO_LITE_TIMEOUT_MS")) << err;
  EXPECT_EQ(err.find("GLOO_LITE_TIMEOUTMS"), err.rfind("GLOO_LITE_TIMEOUTMS")) << "once: " << err;
  EXPECT_FALSE(contains(err, "GLOO_LITE_TEST_SOMETHING")) << err;
}

// Under gloo_lite_run the ranks inherit the launcher's environment: the launcher and rank 0
// warn, not every rank.
TEST(Knobs, TypoWarningIsNotRepeatedByEveryRank) {
  CommandResult result = run_command(
      {launcher_path(), "-n", "3", "--", self_path(), "--rank-helper", "bootstrap"}, seconds(20),
      {"GLOO_LITE_TIMEOTU_MS=5000",
       "GLOO_LITE_HOSTNAME=", "GLOO_LITE_IFNAME=", "GLOO_LITE_TIMEOUT_MS=15000"});
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  size_t warnings = 0;
  for (const auto& line : split_lines(result.err)) {
    if (contains(line, "GLOO_LITE_TIMEOTU_MS is set but is not a gloo_lite knob")) ++warnings;
  }
  EXPECT_EQ(warnings, 2u) << result.err;
  EXPECT_TRUE(contains(result.err, " launcher [config] WARN GLOO_LITE_TIMEOTU_MS")) << result.err;
  EXPECT_TRUE(contains(result.err, " rank 0 [config] WARN GLOO_LITE_TIMEOTU_MS")) << result.err;
}

std::vector<std::string> launch(std::vector<std::string> args) {
  args.insert(args.begin(), launcher_path());
  return args;
}

TEST(KnobsAtStart, GlooLiteRunRejectsBadKnobsBeforeStartingRanks) {
  TempDir dir;
  std::string marker = dir.path() + "/started";
  for (const char* bad :
       {"GLOO_LITE_TIMEOUT_MS=0", "GLOO_LITE_TIMEOUT_MS=-5", "GLOO_LITE_TIMEOUT_MS=10000000000000",
        "GLOO_LITE_ALGO=allreduce:rnig", "GLOO_LITE_TCP_EAGER_BYTES=-64K"}) {
    CommandResult result = run_command(
        launch({"-n", "2", "--", "/bin/sh", "-c", "touch " + marker}), seconds(20), {bad});
    EXPECT_EQ(result.exit_code, 2) << bad << ": " << result.describe();
    std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_TRUE(contains(result.err, "gloo_lite_run: " + name + "='")) << result.err;
    EXPECT_FALSE(contains(result.err, "store")) << "no store time-out: " << result.err;
    EXPECT_LT(result.elapsed, seconds(5)) << result.describe();
  }
  EXPECT_FALSE(wait_file(marker, std::chrono::milliseconds(1))) << "a rank was started";
  CommandResult good =
      run_command(launch({"-n", "2", "--", "/bin/sh", "-c", "touch " + marker}), seconds(20),
                  {"GLOO_LITE_TIMEOUT_MS=5000", "GLOO_LITE_ALGO=allreduce:ring;broadcast:tree",
                   "GLOO_LITE_TCP_EAGER_BYTES=64K"});
  EXPECT_EQ(good.exit_code, 0) << good.describe();
}

TEST(KnobsAtStart, InitFromEnvRejectsABadTimeoutInsteadOfTimingOut) {
  TempDir dir;
  CommandResult result =
      run_command({self_path(), "--rank-helper", "bootstrap"}, seconds(20),
                  {"GLOO_LITE_RANK=0", "GLOO_LITE_SIZE=2", "GLOO_LITE_STORE=file://" + dir.path(),
                   "GLOO_LITE_PREFIX=", "GLOO_LITE_TIMEOUT_MS=0"});
  EXPECT_EQ(result.exit_code, 1) << result.describe();
  EXPECT_TRUE(contains(result.err, "GLOO_LITE_TIMEOUT_MS='0' is out of range")) << result.err;
  EXPECT_LT(result.elapsed, seconds(5)) << result.describe();
}

TEST(KnobsAtStart, KnobsListShowsWhatEachAllows) {
  CommandResult result = run_command(launch({"--knobs"}), seconds(20));
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_TRUE(contains(result.out, "GLOO_LITE_TIMEOUT_MS  (default: 300000)")) << result.out;
  EXPECT_TRUE(contains(result.out, "allowed: milliseconds in 1..2592000000")) << result.out;
  EXPECT_TRUE(contains(result.out, "allowed: one of error, warn, info, debug, trace"))
      << result.out;
  // Every knob has its allowed line.
  size_t knobs = 0, allowed = 0;
  for (const auto& line : split_lines(result.out)) {
    if (line.compare(0, 10, "GLOO_LITE_") == 0) ++knobs;
    if (contains(line, "    allowed: ")) ++allowed;
  }
  EXPECT_EQ(knobs, gloo_lite_knobs().size());
  EXPECT_EQ(allowed, knobs);
}

#ifdef GLOO_LITE_BENCH_PATH
TEST(KnobsAtStart, GlooLiteBenchRejectsBadKnobs) {
  CommandResult result =
      run_command(launch({"-n", "1", "--", GLOO_LITE_BENCH_PATH, "-b", "8", "-e", "8", "-n", "1"}),
                  seconds(30), {"GLOO_LITE_TCP_EAGER_BYTES="});
  ASSERT_EQ(result.exit_code, 0) << "the bench command itself must work: " << result.describe();
  // The launcher would catch the knob first; start the bench alone, as one rank would be.
  TempDir dir;
  CommandResult bad =
      run_command({GLOO_LITE_BENCH_PATH, "-b", "8", "-e", "8", "-n", "1"}, seconds(20),
                  {"GLOO_LITE_RANK=0", "GLOO_LITE_SIZE=1", "GLOO_LITE_STORE=file://" + dir.path(),
                   "GLOO_LITE_TCP_EAGER_BYTES=-1"});
  EXPECT_NE(bad.exit_code, 0) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "GLOO_LITE_TCP_EAGER_BYTES='-1'")) << bad.err;
}
#endif

}  // namespace
}  // namespace gloo_lite::test
