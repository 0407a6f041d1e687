// The public tuning queries for a described cluster (gloo_lite/algorithm_choice.h), which
// gloo_lite_tuner prints, against the registry asked directly with the call it describes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gloo_lite/algorithm_choice.h"
#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite {
namespace {

// 2 hosts of 4 ranks, an allgather of 4096 float32 per rank.
DescribedCall two_hosts() {
  DescribedCall call;
  call.collective = Collective::kAllgather;
  call.ranks = 8;
  call.count = 4096;
  call.ranks_per_core = 0.5;
  for (int r = 0; r < 8; ++r) call.hosts.push_back(r < 4 ? "a" : "b");
  return call;
}

TEST(DescribedCall, EstimatesAreTheRegistrysRanking) {
  ::unsetenv("GLOO_LITE_ALGO");
  const DescribedCall described = two_hosts();
  algo::Call call;
  call.size = 8;
  call.collective = Collective::kAllgather;
  call.type = DataType::kFloat32;
  call.element = 4;
  call.ranks_per_core = 0.5;
  call.hosts = &described.hosts;
  for (int r = 0; r < 8; ++r) {
    call.blocks.push_back(4096);
    call.offsets.push_back(size_t(r) * 4096);
  }
  std::vector<algo::Ranked> expected = algo::rank_algorithms(call, algo::CostModel::get());
  std::vector<AlgorithmEstimate> got = described_estimates(described);
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_GT(got.size(), 1u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].algorithm, expected[i].algorithm->name) << i;
    EXPECT_DOUBLE_EQ(got[i].seconds, expected[i].estimate) << i;
    if (i > 0) {
      EXPECT_LE(got[i - 1].seconds, got[i].seconds) << i;
    }
  }
  EXPECT_EQ(described_choice(described), got[0].algorithm);
  EXPECT_EQ(described_choice(described, got[1].algorithm), got[1].algorithm);
}

TEST(DescribedCall, HostsOfTheWrongLengthAreRefused) {
  DescribedCall call = two_hosts();
  call.hosts.pop_back();
  try {
    described_estimates(call);
    FAIL() << "7 hosts for 8 ranks were accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("allgather names the hosts of 7 ranks for 8"),
              std::string::npos)
        << e.what();
  }
  call.ranks = 0;
  call.hosts.clear();
  EXPECT_THROW(described_choice(call), InvalidArgument);
}

TEST(DescribedCall, CostFiguresAreTheModels) {
  const algo::CostModel& model = algo::CostModel::get();
  const CostFigures figures = cost_figures();
  EXPECT_EQ(figures.alpha, model.alpha);
  EXPECT_EQ(figures.beta, model.beta);
  EXPECT_EQ(figures.gamma, model.gamma);
  EXPECT_EQ(figures.overhead, model.overhead);
  EXPECT_EQ(figures.network_alpha, model.cross_alpha());
  EXPECT_EQ(figures.network_beta, model.cross_beta());
  EXPECT_EQ(figures.shm_alpha, model.shm_alpha);
  EXPECT_EQ(figures.shm_beta, model.shm_beta);
}

}  // namespace
}  // namespace gloo_lite
