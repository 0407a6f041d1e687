#include <gtest/gtest.h>

#include "gloo_lite/base/error.h"
#include "rendezvous/stores.h"

namespace gloo_lite::test {
namespace {

TEST(PrefixStore, ScopesKeysUnderThePrefix) {
  auto inner = make_hash_store();
  auto job1 = make_prefix_store(inner, "job1");
  auto job2 = make_prefix_store(inner, "job2");
  job1->set("addr", to_bytes("a1"));
  job2->set("addr", to_bytes("a2"));
  EXPECT_EQ(to_string(inner->get("job1/addr", Deadline::after(std::chrono::seconds(1)))), "a1");
  EXPECT_EQ(to_string(inner->get("job2/addr", Deadline::after(std::chrono::seconds(1)))), "a2");
  EXPECT_FALSE(job1->check({"other"}));
  inner->set("job2/other", to_bytes("x"));
  EXPECT_FALSE(job1->check({"other"}));
  EXPECT_TRUE(job2->check({"other"}));

  auto nested = make_prefix_store(job1, "ctx3");
  EXPECT_EQ(nested->add("n", 2), 2);
  EXPECT_EQ(to_string(inner->get("job1/ctx3/n", Deadline::after(std::chrono::seconds(1)))), "2");
  EXPECT_TRUE(nested->erase("n"));
  EXPECT_FALSE(inner->check({"job1/ctx3/n"}));
  EXPECT_NE(nested->describe().find("job1/"), std::string::npos);
}

TEST(PrefixStore, RejectsAnEmptyPrefixOrNullStore) {
  EXPECT_THROW(make_prefix_store(make_hash_store(), ""), InvalidArgument);
  EXPECT_THROW(make_prefix_store(nullptr, "p"), InvalidArgument);
}

}  // namespace
}  // namespace gloo_lite::test
