// read_launch_info() for each launcher's environment, create_device_from_env(), and
// init_from_env() end to end with ranks as processes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

// Every variable read_launch_info looks at: cleared for the test, restored afterwards, so a
// test run inside a Slurm job or under torchrun sees only what each test sets.
const char* const kLaunchVars[] = {"GLOO_LITE_RANK",
                                   "GLOO_LITE_SIZE",
                                   "GLOO_LITE_LOCAL_RANK",
                                   "GLOO_LITE_STORE",
                                   "GLOO_LITE_PREFIX",
                                   "GLOO_LITE_TRANSPORT",
                                   "RANK",
                                   "WORLD_SIZE",
                                   "LOCAL_RANK",
                                   "MASTER_ADDR",
                                   "MASTER_PORT",
                                   "OMPI_COMM_WORLD_RANK",
                                   "OMPI_COMM_WORLD_SIZE",
                                   "OMPI_COMM_WORLD_LOCAL_RANK",
                                   "PMI_RANK",
                                   "PMI_SIZE",
                                   "SLURM_PROCID",
                                   "SLURM_NTASKS",
                                   "SLURM_LOCALID"};

class EnvGuard {
 public:
  EnvGuard() {
    for (const char* name : kLaunchVars) {
      const char* value = std::getenv(name);
      if (value != nullptr) saved_[name] = value;
      unsetenv(name);
    }
  }
  ~EnvGuard() {
    for (const char* name : kLaunchVars) {
      auto it = saved_.find(name);
      if (it == saved_.end()) {
        unsetenv(name);
      } else {
        setenv(name, it->second.c_str(), 1);
      }
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

  void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

 private:
  std::map<std::string, std::string> saved_;
};

// The InvalidArgument message of read_launch_info(), or "" when it did not throw.
std::string launch_error() {
  try {
    read_launch_info();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ReadLaunchInfo, GlooLiteVariables) {
  EnvGuard env;
  env.set("GLOO_LITE_RANK", "2");
  env.set("GLOO_LITE_SIZE", "4");
  env.set("GLOO_LITE_LOCAL_RANK", "1");
  env.set("GLOO_LITE_STORE", "file:///tmp/somewhere");
  LaunchInfo info = read_launch_info();
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.store_url, "file:///tmp/somewhere");
  EXPECT_TRUE(contains(info.source, "GLOO_LITE_RANK"));
  EXPECT_FALSE(info.host_store);
}

TEST(ReadLaunchInfo, TorchrunDerivesTheStoreFromMasterAddrAndPort) {
  EnvGuard env;
  env.set("RANK", "3");
  env.set("WORLD_SIZE", "8");
  env.set("LOCAL_RANK", "3");
  env.set("MASTER_ADDR", "10.1.2.3");
  env.set("MASTER_PORT", "29500");
  LaunchInfo info = read_launch_info();
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.local_rank, 3);
  EXPECT_EQ(info.source, "torchrun");
  // MASTER_PORT is torch's own store; ours is on the next port, hosted by rank 0.
  EXPECT_EQ(info.store_url, "tcp://10.1.2.3:29501");
  EXPECT_FALSE(info.host_store);
  EXPECT_EQ(info.store_port, 29501);

  env.set("RANK", "0");
  EXPECT_TRUE(read_launch_info().host_store);

  env.set("MASTER_ADDR", "fd00::7");
  EXPECT_EQ(read_launch_info().store_url, "tcp://[fd00::7]:29501");

  // An explicit store wins, and then nobody hosts one.
  env.set("GLOO_LITE_STORE", "redis://127.0.0.1:6379");
  info = read_launch_info();
  EXPECT_EQ(info.store_url, "redis://127.0.0.1:6379");
  EXPECT_FALSE(info.host_store);
}

TEST(ReadLaunchInfo, TorchrunWithoutStoreOrMaster) {
  EnvGuard env;
  env.set("RANK", "0");
  env.set("WORLD_SIZE", "2");
  std::string error = launch_error();
  EXPECT_TRUE(contains(error, "GLOO_LITE_STORE")) << error;
  EXPECT_TRUE(contains(error, "MASTER_ADDR")) << error;

  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", "65535");
  error = launch_error();
  EXPECT_TRUE(contains(error, "MASTER_PORT='65535'")) << error;
  env.set("MASTER_PORT", "http");
  EXPECT_TRUE(contains(launch_error(), "MASTER_PORT='http'"));
}

TEST(ReadLaunchInfo, OpenMpi) {
  EnvGuard env;
  env.set("OMPI_COMM_WORLD_RANK", "5");
  env.set("OMPI_COMM_WORLD_SIZE", "6");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "2");
  env.set("GLOO_LITE_STORE", "tcp://store:1234");
  LaunchInfo info = read_launch_info();
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.size, 6);
  EXPECT_EQ(info.local_rank, 2);
  EXPECT_EQ(info.source, "Open MPI");
  EXPECT_EQ(info.store_url, "tcp://store:1234");
}

TEST(ReadLaunchInfo, Pmi) {
  EnvGuard env;
  env.set("PMI_RANK", "0");
  env.set("PMI_SIZE", "1");
  env.set("GLOO_LITE_STORE", "file:///tmp/x");
  LaunchInfo info = read_launch_info();
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
  EXPECT_EQ(info.local_rank, -1);  // PMI does not say
  EXPECT_EQ(info.source, "PMI");
}

TEST(ReadLaunchInfo, Slurm) {
  EnvGuard env;
  env.set("SLURM_PROCID", "9");
  env.set("SLURM_NTASKS", "16");
  env.set("SLURM_LOCALID", "1");
  env.set("GLOO_LITE_STORE", "file:///tmp/x");
  LaunchInfo info = read_launch_info();
  EXPECT_EQ(info.rank, 9);
  EXPECT_EQ(info.size, 16);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.source, "Slurm");
}

TEST(ReadLaunchInfo, StoreIsRequiredOutsideTorchrun) {
  EnvGuard env;
  env.set("SLURM_PROCID", "0");
  env.set("SLURM_NTASKS", "2");
  std::string error = launch_error();
  EXPECT_TRUE(contains(error, "GLOO_LITE_STORE is not set")) << error;
  EXPECT_TRUE(contains(error, "Slurm")) << error;
}

TEST(ReadLaunchInfo, MalformedStoreUrl) {
  EnvGuard env;
  env.set("GLOO_LITE_RANK", "0");
  env.set("GLOO_LITE_SIZE", "1");
  env.set("GLOO_LITE_STORE", "carrier://nest");
  std::string error = launch_error();
  EXPECT_TRUE(contains(error, "GLOO_LITE_STORE is not usable")) << error;
  EXPECT_TRUE(contains(error, "carrier://nest")) << error;
}

TEST(ReadLaunchInfo, Precedence) {
  EnvGuard env;
  env.set("GLOO_LITE_STORE", "file:///tmp/x");
  env.set("SLURM_PROCID", "4");
  env.set("SLURM_NTASKS", "5");
  EXPECT_EQ(read_launch_info().source, "Slurm");
  env.set("PMI_RANK", "3");
  env.set("PMI_SIZE", "5");
  EXPECT_EQ(read_launch_info().source, "PMI");
  env.set("OMPI_COMM_WORLD_RANK", "2");
  env.set("OMPI_COMM_WORLD_SIZE", "5");
  EXPECT_EQ(read_launch_info().source, "Open MPI");
  env.set("RANK", "1");
  env.set("WORLD_SIZE", "5");
  EXPECT_EQ(read_launch_info().source, "torchrun");
  env.set("GLOO_LITE_RANK", "0");
  env.set("GLOO_LITE_SIZE", "5");
  LaunchInfo info = read_launch_info();
  EXPECT_EQ(info.rank, 0);
  EXPECT_TRUE(contains(info.source, "GLOO_LITE"));
}

TEST(ReadLaunchInfo, NothingSetSaysWhatToSet) {
  EnvGuard env;
  std::string error = launch_error();
  EXPECT_TRUE(contains(error, "GLOO_LITE_RANK")) << error;
  EXPECT_TRUE(contains(error, "gloo_lite_run")) << error;
  EXPECT_TRUE(contains(error, "SLURM_PROCID")) << error;
}

TEST(ReadLaunchInfo, RejectsMalformedValues) {
  EnvGuard env;
  env.set("GLOO_LITE_STORE", "file:///tmp/x");
  struct Case {
    const char* rank;
    const char* size;
    const char* expect;
  };
  for (const Case& c :
       {Case{"abc", "4", "GLOO_LITE_RANK='abc'"}, Case{"1x", "4", "GLOO_LITE_RANK='1x'"},
        Case{"1", "4.0", "GLOO_LITE_SIZE='4.0'"},
        Case{"1", "99999999999", "GLOO_LITE_SIZE='99999999999'"}, Case{"4", "4", "must be in 0..3"},
        Case{"-1", "4", "must be in 0..3"}, Case{"0", "0", "must be at least 1"},
        Case{"0", "-3", "must be at least 1"}}) {
    env.set("GLOO_LITE_RANK", c.rank);
    env.set("GLOO_LITE_SIZE", c.size);
    std::string error = launch_error();
    EXPECT_TRUE(contains(error, c.expect)) << c.rank << "/" << c.size << ": " << error;
  }
  env.set("GLOO_LITE_RANK", "1");
  env.set("GLOO_LITE_SIZE", "4");
  env.set("GLOO_LITE_LOCAL_RANK", "seven");
  EXPECT_TRUE(contains(launch_error(), "GLOO_LITE_LOCAL_RANK='seven'"));
}

TEST(ReadLaunchInfo, HalfSetPairIsAnError) {
  EnvGuard env;
  env.set("GLOO_LITE_STORE", "file:///tmp/x");
  env.set("RANK", "1");
  std::string error = launch_error();
  EXPECT_TRUE(contains(error, "RANK is set but WORLD_SIZE is not")) << error;
  unsetenv("RANK");
  env.set("GLOO_LITE_SIZE", "3");
  error = launch_error();
  EXPECT_TRUE(contains(error, "GLOO_LITE_SIZE is set but GLOO_LITE_RANK is not")) << error;
}

TEST(CreateDeviceFromEnv, RejectsUnknownTransports) {
  EnvGuard env;
  env.set("GLOO_LITE_TRANSPORT", "carrier-pigeon");
  try {
    create_device_from_env();
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "carrier-pigeon")) << e.what();
    EXPECT_TRUE(contains(e.what(), "available transports: ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "tcp")) << e.what();
  }
}

// Each rank passes its number to the right; returns normally when everything arrived.
void ring_exchange(Context& context) {
  int rank = context.rank();
  int size = context.size();
  int sent = 100 + rank;
  int received = -1;
  if (rank % 2 == 0) {
    context.send((rank + 1) % size, &sent, sizeof(sent), 1);
    context.recv((rank + size - 1) % size, &received, sizeof(received), 1);
  } else {
    context.recv((rank + size - 1) % size, &received, sizeof(received), 1);
    context.send((rank + 1) % size, &sent, sizeof(sent), 1);
  }
  EXPECT_EQ(received, 100 + (rank + size - 1) % size);
}

TEST(InitFromEnv, FileStoreWithGlooLiteVariables) {
  TempDir dir;
  auto results = run_processes(
      3,
      [&](int rank) {
        EnvGuard env;
        env.set("GLOO_LITE_RANK", std::to_string(rank));
        env.set("GLOO_LITE_SIZE", "3");
        env.set("GLOO_LITE_STORE", "file://" + dir.path());
        env.set("GLOO_LITE_PREFIX", "init-test");
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        setenv("GLOO_LITE_TIMEOUT_MS", "15000", 1);
        auto context = init_from_env();
        ASSERT_EQ(context->rank(), rank);
        ASSERT_EQ(context->size(), 3);
        ring_exchange(*context);
      },
      std::chrono::seconds(30));
  expect_all_ok(results);
}

TEST(InitFromEnv, TorchrunConventionRankZeroHostsTheStore) {
  int port = free_loopback_port();
  ASSERT_GT(port, 1);
  auto results = run_processes(
      3,
      [&](int rank) {
        EnvGuard env;
        env.set("RANK", std::to_string(rank));
        env.set("WORLD_SIZE", "3");
        env.set("LOCAL_RANK", std::to_string(rank));
        env.set("MASTER_ADDR", "127.0.0.1");
        env.set("MASTER_PORT", std::to_string(port - 1));
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        setenv("GLOO_LITE_TIMEOUT_MS", "15000", 1);
        auto context = init_from_env();
        ring_exchange(*context);
      },
      std::chrono::seconds(30));
  expect_all_ok(results);
}

TEST(InitFromEnv, ReportsAMissingRankBeforeTouchingTheNetwork) {
  EnvGuard env;
  EXPECT_THROW(init_from_env(), InvalidArgument);
}

}  // namespace
}  // namespace gloo_lite::test
