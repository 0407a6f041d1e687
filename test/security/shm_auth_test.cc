// The shared-memory transport's proof of the job's secret (transport_shm/shm_auth.h), by real
// processes: two ranks of this binary's --rank-program on a file store with
// GLOO_LITE_TRANSPORT=shm. Only the same user can map a rank's segment at all; these are the
// cases where that user runs processes of two jobs, or ranks set up with different secrets.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test/launcher/command.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;

constexpr const char* kSecret = "shm-pairs-share-this-secret-0123456789";

// Both ranks' results; `secrets[r]` is rank r's GLOO_LITE_AUTH_SECRET ("" for none).
std::vector<CommandResult> run_pair(const std::vector<std::string>& secrets) {
  TempDir dir;
  std::vector<std::unique_ptr<Command>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> env{"GLOO_LITE_RANK=" + std::to_string(rank),
                                 "GLOO_LITE_SIZE=2",
                                 "GLOO_LITE_STORE=file://" + dir.path() + "/store",
                                 "GLOO_LITE_PREFIX=shm-auth",
                                 "GLOO_LITE_TRANSPORT=shm",
                                 "GLOO_LITE_TIMEOUT_MS=10000",
                                 "GLOO_LITE_AUTH_FILE=",
                                 "GLOO_LITE_AUTH_SECRET=" + secrets[rank]};
    if (secrets[rank].empty()) env.back() = "GLOO_LITE_AUTH_SECRET=";
    ranks.push_back(std::make_unique<Command>(
        std::vector<std::string>{self_path(), "--rank-program", dir.path()}, env));
  }
  std::vector<CommandResult> results;
  for (auto& rank : ranks) results.push_back(rank->wait(seconds(60)));
  return results;
}

// Every rank failed, and one of them (the one that found it) says `why`.
void expect_refused(const std::vector<CommandResult>& results, const std::string& why) {
  bool named = false;
  for (const CommandResult& result : results) {
    EXPECT_NE(result.exit_code, 0) << "a rank connected: " << result.describe() << result.out;
    EXPECT_EQ(result.out.find("sum 3"), std::string::npos) << result.out;
    named = named || result.err.find(why) != std::string::npos;
  }
  EXPECT_TRUE(named) << "no rank said '" << why << "':\n"
                     << results[0].describe() << "\n"
                     << results[1].describe();
}

TEST(ShmAuth, RanksWithTheSameSecretConnect) {
  for (const CommandResult& result : run_pair({kSecret, kSecret})) {
    EXPECT_EQ(result.exit_code, 0) << result.describe();
    EXPECT_NE(result.out.find("sum 3"), std::string::npos) << result.out;
  }
}

TEST(ShmAuth, AnotherSecretIsRefused) {
  expect_refused(run_pair({kSecret, std::string(kSecret) + "-other-job"}),
                 "without a valid proof of the job's secret");
}

TEST(ShmAuth, NoSecretOnOneSideIsRefusedNamingTheKnobs) {
  expect_refused(run_pair({kSecret, ""}), "every rank of a job must hold the same secret");
  expect_refused(run_pair({"", kSecret}), "GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE");
}

}  // namespace
}  // namespace gloo_lite::test
