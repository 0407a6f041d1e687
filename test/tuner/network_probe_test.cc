// The network probe (gloo_lite/network_probe.h) with real processes on this machine, "hosts"
// faked with GLOO_LITE_HOST_ID per rank (TCP between them over loopback): a context that spans
// hosts measures a figure that every rank holds bit for bit the same, and the tuner ranks its
// calls with it; GLOO_LITE_NET_BETA_GBPS skips the probe (and is the figure); a single-host
// context runs nothing; a split's sub-context takes its parent's figure without a second probe.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/network_probe.h"
#include "rendezvous/stores.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;

// Runs body on one process per entry of `hosts`, each with that host identity and `knob` as
// GLOO_LITE_NET_BETA_GBPS ("" unset).
void run_hosts(const std::vector<std::string>& hosts, const std::string& knob,
               const std::function<void(Context&)>& body) {
  TempDir directory;
  const int ranks = static_cast<int>(hosts.size());
  expect_all_ok(run_processes(
      ranks,
      [&](int rank) {
        setenv("GLOO_LITE_HOST_ID", ("probe-" + hosts[rank]).c_str(), 1);
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        unsetenv("GLOO_LITE_TRANSPORT");
        unsetenv("GLOO_LITE_ALGO");
        if (knob.empty()) {
          unsetenv("GLOO_LITE_NET_BETA_GBPS");
        } else {
          setenv("GLOO_LITE_NET_BETA_GBPS", knob.c_str(), 1);
        }
        ContextOptions options;
        options.timeout = seconds(30);
        auto context = Context::create(make_file_store(directory.path()), rank, ranks,
                                       create_device_from_env(), options);
        body(*context);
      },
      seconds(120)));
}

// Every rank's value of `mine`, through the mesh.
std::vector<double> gathered(Context& context, double mine) {
  std::vector<double> all(context.size());
  allgather(context, &mine, all.data(), 1, DataType::kFloat64);
  return all;
}

// How many calls the probe's stream ran on this context (its flight records).
size_t probe_calls(Context& context) {
  size_t calls = 0;
  for (const auto& entry : engine_of(context).flight_recorder().entries()) {
    calls += entry.tag == kNetworkProbeTag ? 1 : 0;
  }
  return calls;
}

double model_beta(Context& context) {
  algo::Call call = algo::Call::on(engine_of(context), Collective::kAllreduce, DataType::kFloat32,
                                   ReduceOp::kSum, 0);
  return algo::CostModel::for_call(call).net_beta;
}

TEST(NetworkProbe, SpanningContextAgreesOnOneFigure) {
  run_hosts({"a", "a", "b", "b", "c"}, "", [](Context& context) {
    const double beta = engine_of(context).network_beta();
    // Loopback TCP moves 1 MiB well above 10 MB/s and well below 1 TB/s: a measurement, not a
    // placeholder or a zero time.
    EXPECT_GT(beta, 1e-12) << "rank " << context.rank();
    EXPECT_LT(beta, 1e-7) << "rank " << context.rank();
    for (double other : gathered(context, beta)) {
      EXPECT_EQ(std::memcmp(&other, &beta, sizeof beta), 0)
          << "rank " << context.rank() << ": " << beta << " against " << other;
    }
    // The leaders exchange point to point; one collective, the allreduce that agrees on the
    // slowest, runs on the probe's own stream.
    EXPECT_EQ(probe_calls(context), 1u);
    EXPECT_EQ(model_beta(context), beta);
  });
}

TEST(NetworkProbe, KnobSkipsIt) {
  run_hosts({"a", "a", "b"}, "0.025", [](Context& context) {
    EXPECT_EQ(engine_of(context).network_beta(), 0);
    EXPECT_EQ(probe_calls(context), 0u);
    EXPECT_DOUBLE_EQ(model_beta(context), 1 / 0.025e9);
  });
}

TEST(NetworkProbe, OneHostPaysNothing) {
  run_hosts({"a", "a", "a"}, "", [](Context& context) {
    EXPECT_EQ(engine_of(context).network_beta(), 0);
    EXPECT_EQ(probe_calls(context), 0u);
    EXPECT_EQ(model_beta(context), 0);
  });
}

TEST(NetworkProbe, SplitTakesItsParentsFigure) {
  run_hosts({"a", "a", "b", "b"}, "", [](Context& context) {
    const double parent = engine_of(context).network_beta();
    EXPECT_GT(parent, 0);
    // Ranks 0, 2 and 1, 3: each sub-context spans both hosts.
    auto sub = context.split(context.rank() % 2, context.rank());
    ASSERT_NE(sub, nullptr);
    EXPECT_EQ(engine_of(*sub).network_beta(), parent);
    EXPECT_EQ(probe_calls(*sub), 0u);
  });
}

// Ranks 0, 1 of host a set the knob, ranks 2, 3 of host b do not: every rank fails at creation
// with an error naming both groups, well before the probe's timeout (the ranks without the
// knob would otherwise wait in its exchange for ranks that skipped it).
TEST(NetworkProbe, RanksThatDisagreeOnTheKnobFailAtCreation) {
  TempDir directory;
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  expect_all_ok(run_processes(
      4,
      [&](int rank) {
        setenv("GLOO_LITE_HOST_ID", ("probe-" + hosts[rank]).c_str(), 1);
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        unsetenv("GLOO_LITE_TRANSPORT");
        if (rank < 2) {
          setenv("GLOO_LITE_NET_BETA_GBPS", "0.025", 1);
        } else {
          unsetenv("GLOO_LITE_NET_BETA_GBPS");
        }
        ContextOptions options;
        options.timeout = seconds(30);
        const auto began = std::chrono::steady_clock::now();
        try {
          Context::create(make_file_store(directory.path()), rank, 4, create_device_from_env(),
                          options);
          ADD_FAILURE() << "rank " << rank << ": created a context with disagreeing knobs";
        } catch (const InvalidArgument& e) {
          const std::string what = e.what();
          EXPECT_NE(what.find("GLOO_LITE_NET_BETA_GBPS"), std::string::npos) << what;
          EXPECT_NE(what.find("ranks 0, 1: 0.025 GB/s"), std::string::npos) << what;
          EXPECT_NE(what.find("ranks 2, 3: none"), std::string::npos) << what;
        }
        EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(15)) << "rank " << rank;
      },
      seconds(120)));
}

// On one host no network figure is used: ranks may differ in the knob.
TEST(NetworkProbe, OneHostIgnoresADisagreeingKnob) {
  TempDir directory;
  expect_all_ok(run_processes(
      2,
      [&](int rank) {
        setenv("GLOO_LITE_HOST_ID", "probe-a", 1);
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        unsetenv("GLOO_LITE_TRANSPORT");
        if (rank == 0) {
          setenv("GLOO_LITE_NET_BETA_GBPS", "0.025", 1);
        } else {
          unsetenv("GLOO_LITE_NET_BETA_GBPS");
        }
        auto context =
            Context::create(make_file_store(directory.path()), rank, 2, create_device_from_env());
        EXPECT_EQ(engine_of(*context).network_beta(), 0);
        EXPECT_EQ(probe_calls(*context), 0u);
      },
      seconds(60)));
}

}  // namespace
}  // namespace gloo_lite::test
