// Ranks as real processes, each opening the store by URL, as launched jobs do.
#include <gtest/gtest.h>

#include <thread>

#include "gloo_lite/base/error.h"
#include "test/store/store_backends.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

class StoreAcrossProcesses : public ::testing::TestWithParam<BackendKind> {};

TEST_P(StoreAcrossProcesses, RanksRendezvousAndCountExactly) {
  constexpr int kRanks = 4;
  constexpr int kIncrements = 100;
  auto backend = GetParam().make();
  auto open = backend->opener_for_child();
  ASSERT_TRUE(open);
  auto results = run_processes(
      kRanks,
      [&](int rank) {
        auto store = open();
        store->set("rank/" + std::to_string(rank), to_bytes("address-of-" + std::to_string(rank)));
        for (int i = 0; i < kIncrements; ++i) store->add("arrivals", 1);
        std::vector<std::string> keys;
        for (int peer = 0; peer < kRanks; ++peer) keys.push_back("rank/" + std::to_string(peer));
        auto values = store->multi_get(keys, Deadline::after(std::chrono::seconds(20)));
        for (int peer = 0; peer < kRanks; ++peer) {
          EXPECT_EQ(to_string(values[peer]), "address-of-" + std::to_string(peer));
        }
      },
      std::chrono::seconds(30));
  expect_all_ok(results);
  auto store = backend->open();
  EXPECT_EQ(to_string(store->get("arrivals", Deadline::after(std::chrono::seconds(5)))),
            std::to_string(kRanks * kIncrements));
}

// A client opened before fork() must not share its pooled connections with the children:
// their requests would interleave on one socket.
TEST_P(StoreAcrossProcesses, ClientOpenedBeforeForkWorksInEveryProcess) {
  constexpr int kRanks = 3;
  auto backend = GetParam().make();
  auto store = backend->open();
  store->set("before-fork", to_bytes("parent"));
  std::thread([&] { store->check({"warm-a second connection too"}); }).join();
  auto results = run_processes(
      kRanks,
      [&](int rank) {
        for (int i = 0; i < 20; ++i) {
          std::string key = "child/" + std::to_string(rank) + "/" + std::to_string(i);
          store->set(key, to_bytes(key));
          EXPECT_EQ(to_string(store->get(key, Deadline::after(std::chrono::seconds(10)))), key);
        }
        EXPECT_EQ(to_string(store->get("before-fork", Deadline::after(std::chrono::seconds(10)))),
                  "parent");
      },
      std::chrono::seconds(30));
  expect_all_ok(results);
  EXPECT_TRUE(store->check({"child/0/19", "child/1/19", "child/2/19"}));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreAcrossProcesses, ::testing::ValuesIn(url_backends()),
                         BackendName());

}  // namespace
}  // namespace gloo_lite::test
