// Log lines say who wrote them: "host:pid rank R [subsys]" in a rank, "host:pid launcher" in
// gloo_lite_run, "host:pid store" in gloo_lite_store, the program's name otherwise; never
// "rank -1" (issue 9).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "gloo_lite/base/log.h"
#include "rendezvous/stores.h"
#include "test/launcher/command.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// The line of `text` that contains `part`, or "".
std::string line_with(const std::string& text, const std::string& part) {
  for (const auto& line : split_lines(text)) {
    if (contains(line, part)) return line;
  }
  return "";
}

TEST(LogIdentity, RankRoleOrProgramName) {
  log_set_rank(-1);
  log_set_identity("");
  EXPECT_EQ(log_identity(), "launcher_tests");
  log_set_identity("launcher");
  EXPECT_EQ(log_identity(), "launcher");
  log_set_rank(3);
  EXPECT_EQ(log_identity(), "rank 3");
  log_set_rank(-1);
  EXPECT_EQ(log_identity(), "launcher");
}

TEST(LogIdentity, LineFormat) {
  log_set_rank(-1);
  log_set_identity("store");
  testing::internal::CaptureStderr();
  LOG_ERROR("store", "hello " << 42);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, host_name() + ":" + std::to_string(getpid()) + " store [store] ERROR hello 42\n");
  log_set_rank(5);
  testing::internal::CaptureStderr();
  LOG_ERROR("coll", "x");
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, host_name() + ":" + std::to_string(getpid()) + " rank 5 [coll] ERROR x\n");
  log_set_rank(-1);
  log_set_identity("");
}

TEST(LogIdentity, LauncherLinesNameTheLauncher) {
  CommandResult result = run_command({launcher_path(), "-n", "1", "--", "true"}, seconds(20),
                                     {"GLOO_LITE_LOG=info", "GLOO_LITE_LOG_SUBSYS="});
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  std::string line = line_with(result.err, ": starting 1 ranks, store ");
  ASSERT_FALSE(line.empty()) << result.err;
  EXPECT_EQ(line.compare(0, host_name().size() + 1, host_name() + ":"), 0) << line;
  EXPECT_TRUE(contains(line, " launcher [launcher] INFO job-")) << line;
  EXPECT_FALSE(contains(result.err, "rank -1")) << result.err;
}

TEST(LogIdentity, StoreLinesNameTheStore) {
  int port = free_loopback_port();
  Command store({GLOO_LITE_STORE_PATH, "--host", "127.0.0.1", "--port", std::to_string(port)},
                {"GLOO_LITE_LOG=debug", "GLOO_LITE_LOG_SUBSYS="});
  {
    // Connecting makes the server log the client at debug level.
    auto client =
        make_tcp_store("127.0.0.1", static_cast<uint16_t>(port), Deadline::after(seconds(10)));
    client->set("k", to_bytes("v"));
  }
  ASSERT_EQ(kill(store.pid(), SIGTERM), 0);
  CommandResult result = store.wait(seconds(20));
  std::string line = line_with(result.err, "connected");
  ASSERT_FALSE(line.empty()) << result.err;
  EXPECT_EQ(line.compare(0, host_name().size() + 1, host_name() + ":"), 0) << line;
  EXPECT_TRUE(contains(line, " store [store] DEBUG ")) << line;
  EXPECT_FALSE(contains(result.err, "rank -1")) << result.err;
}

}  // namespace
}  // namespace gloo_lite::test
