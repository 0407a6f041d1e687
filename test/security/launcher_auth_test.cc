// gloo_lite_run and authentication, end to end: a fresh secret per job by default, the user's
// own when set, none with --no-auth, a group-readable secret file refused before any rank
// starts, and the secret in none of the job's output at debug level.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "gloo_lite/base/deadline.h"
#include "rendezvous/stores.h"
#include "test/launcher/command.h"
#include "test/security/security_support.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;

std::vector<std::string> job(const TempDir& dir, std::vector<std::string> options) {
  std::vector<std::string> argv{launcher_path(), "-n", "2"};
  argv.insert(argv.end(), options.begin(), options.end());
  for (const char* arg : {"--", "", "--rank-program", ""}) argv.push_back(arg);
  argv[argv.size() - 3] = self_path();
  argv.back() = dir.path();
  return argv;
}

std::string secret_seen(const TempDir& dir, int rank) {
  return read_whole_file(dir.path() + "/secret." + std::to_string(rank));
}

TEST(LauncherAuth, EachJobGetsAFreshSecretThatNoOutputShows) {
  TempDir first, second;
  std::vector<std::string> env{
      "GLOO_LITE_AUTH_SECRET=", "GLOO_LITE_AUTH_FILE=", "GLOO_LITE_LOG=debug"};
  CommandResult a = run_command(job(first, {}), seconds(60), env);
  ASSERT_EQ(a.exit_code, 0) << a.describe();
  CommandResult b = run_command(job(second, {}), seconds(60), env);
  ASSERT_EQ(b.exit_code, 0) << b.describe();
  std::string secret = secret_seen(first, 0);
  EXPECT_EQ(secret.size(), 64u) << secret;
  EXPECT_EQ(secret_seen(first, 1), secret);   // one secret per job
  EXPECT_NE(secret_seen(second, 0), secret);  // and a new one for the next
  EXPECT_EQ(count_of(a.out, "sum 3"), 2u) << a.out;
  EXPECT_NE(a.out.find("outsider refused"), std::string::npos) << a.out;
  EXPECT_FALSE(a.err.empty()) << "debug logging wrote nothing: the check would prove nothing";
  EXPECT_EQ(a.out.find(secret), std::string::npos);
  EXPECT_EQ(a.err.find(secret), std::string::npos);
}

TEST(LauncherAuth, TheUsersSecretIsKeptAndNoAuthTurnsItOff) {
  TempDir with, without;
  CommandResult a = run_command(job(with, {}), seconds(60),
                                {std::string("GLOO_LITE_AUTH_SECRET=") + kSecret,
                                 "GLOO_LITE_AUTH_FILE=", "GLOO_LITE_LOG=debug"});
  ASSERT_EQ(a.exit_code, 0) << a.describe();
  EXPECT_EQ(secret_seen(with, 0), kSecret);
  EXPECT_EQ(a.err.find(kSecret), std::string::npos);
  CommandResult b = run_command(job(without, {"--no-auth"}), seconds(60),
                                {"GLOO_LITE_AUTH_SECRET=", "GLOO_LITE_AUTH_FILE="});
  ASSERT_EQ(b.exit_code, 0) << b.describe();
  EXPECT_EQ(secret_seen(without, 0), "(none)");
  EXPECT_EQ(count_of(b.out, "sum 3"), 2u) << b.out;
}

TEST(LauncherAuth, SecretFileOthersCanReadIsRefusedBeforeAnyRankStarts) {
  TempDir dir;
  std::string path = dir.path() + "/secret";
  std::ofstream(path) << kSecret;
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  CommandResult a = run_command(job(dir, {}), seconds(60),
                                {"GLOO_LITE_AUTH_SECRET=", "GLOO_LITE_AUTH_FILE=" + path});
  EXPECT_EQ(a.exit_code, 2) << a.describe();
  EXPECT_NE(a.err.find("chmod 600"), std::string::npos) << a.err;
  EXPECT_EQ(a.err.find(kSecret), std::string::npos);
  EXPECT_EQ(secret_seen(dir, 0), "");  // no rank ran
  // Made private, the same file serves the job.
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  CommandResult b = run_command(job(dir, {}), seconds(60),
                                {"GLOO_LITE_AUTH_SECRET=", "GLOO_LITE_AUTH_FILE=" + path});
  EXPECT_EQ(b.exit_code, 0) << b.describe();
  EXPECT_EQ(count_of(b.out, "sum 3"), 2u) << b.out;
}

// A bad TLS knob is a bad GLOO_LITE_* value like a bad secret file: exit status 2 before any
// rank starts, naming the knob, as gloo_lite_run --help promises.
TEST(LauncherAuth, HalfConfiguredTlsIsRefusedBeforeAnyRankStarts) {
  TempDir dir;
  CommandResult a = run_command(job(dir, {}), seconds(60),
                                {"GLOO_LITE_TLS_CERT=" + dir.path() + "/rank.pem",
                                 "GLOO_LITE_TLS_KEY=", "GLOO_LITE_TLS_CA="});
  EXPECT_EQ(a.exit_code, 2) << a.describe();
  EXPECT_NE(a.err.find("TLS is half configured: GLOO_LITE_TLS_CERT set"), std::string::npos)
      << a.err;
  EXPECT_EQ(secret_seen(dir, 0), "");  // no rank ran
  CommandResult help = run_command({launcher_path(), "--help"}, seconds(20));
  EXPECT_NE(help.out.find("GLOO_LITE_TLS_CERT, GLOO_LITE_TLS_KEY and\nGLOO_LITE_TLS_CA set"),
            std::string::npos)
      << help.out;
}

// gloo_lite_store started by hand: its help names the knobs, and once listening it says on
// stderr whether anyone who can reach it gets in, never showing the secret.
std::string store_says(const char* secret) {
  int port = free_loopback_port();
  Command store(
      {GLOO_LITE_STORE_PATH, "--host", "127.0.0.1", "--port", std::to_string(port)},
      {std::string("GLOO_LITE_AUTH_SECRET=") + (secret ? secret : ""), "GLOO_LITE_AUTH_FILE="});
  // Up once a client (with the same secret) gets an answer.
  ScopedEnv same_secret("GLOO_LITE_AUTH_SECRET", secret);
  ScopedEnv no_file("GLOO_LITE_AUTH_FILE", nullptr);
  make_tcp_store("127.0.0.1", static_cast<uint16_t>(port), Deadline::after(seconds(10)));
  EXPECT_EQ(kill(store.pid(), SIGTERM), 0);
  CommandResult result = store.wait(seconds(20));
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  return result.err;
}

TEST(StoreToolAuth, SaysWhetherClientsMustProveTheSecret) {
  CommandResult help = run_command({GLOO_LITE_STORE_PATH, "--help"}, seconds(20));
  EXPECT_NE(help.out.find("GLOO_LITE_AUTH_SECRET"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("GLOO_LITE_TLS_CERT"), std::string::npos) << help.out;

  std::string open = store_says(nullptr);
  EXPECT_EQ(count_of(open, "no authentication: anyone who can reach this port"), 1u) << open;
  std::string closed = store_says(kSecret);
  EXPECT_EQ(count_of(closed, "clients must prove the job's secret"), 1u) << closed;
  EXPECT_EQ(closed.find(kSecret), std::string::npos) << closed;
}

}  // namespace
}  // namespace gloo_lite::test
