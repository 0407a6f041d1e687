#include <gtest/gtest.h>

#include "gloo_lite/base/error.h"
#include "rendezvous/store_url.h"
#include "rendezvous/stores.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

TEST(StoreUrl, ParsesEachAcceptedForm) {
  StoreUrl file = parse_store_url("file:///shared/rendezvous");
  EXPECT_EQ(file.scheme, "file");
  EXPECT_EQ(file.path, "/shared/rendezvous");

  StoreUrl tcp = parse_store_url("tcp://node-1.example:29500");
  EXPECT_EQ(tcp.scheme, "tcp");
  EXPECT_EQ(tcp.host, "node-1.example");
  EXPECT_EQ(tcp.port, 29500);

  StoreUrl v6 = parse_store_url("tcp://[::1]:7");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 7);

  StoreUrl redis = parse_store_url("redis://:p%40ss:w/rd@10.1.2.3:6380/5");
  EXPECT_EQ(redis.scheme, "redis");
  EXPECT_EQ(redis.password, "p@ss:w/rd");
  EXPECT_EQ(redis.host, "10.1.2.3");
  EXPECT_EQ(redis.port, 6380);
  EXPECT_EQ(redis.db, 5);

  StoreUrl plain = parse_store_url("redis://cache");
  EXPECT_EQ(plain.host, "cache");
  EXPECT_EQ(plain.port, 6379);
  EXPECT_EQ(plain.db, 0);
  EXPECT_TRUE(plain.password.empty());

  StoreUrl redis6 = parse_store_url("redis://:pw@[fe80::2]:1/0");
  EXPECT_EQ(redis6.host, "fe80::2");
  EXPECT_EQ(redis6.port, 1);
  EXPECT_TRUE(redis6.user.empty());

  StoreUrl acl = parse_store_url("redis://job%40team:s3cret@cache:6380");
  EXPECT_EQ(acl.user, "job@team");
  EXPECT_EQ(acl.password, "s3cret");
  EXPECT_EQ(acl.host, "cache");
  EXPECT_EQ(acl.port, 6380);
}

class MalformedStoreUrl : public ::testing::TestWithParam<const char*> {};

TEST_P(MalformedStoreUrl, IsRejectedWithTheAcceptedForms) {
  for (int via_open = 0; via_open < 2; ++via_open) {
    try {
      if (via_open) {
        open_store(GetParam(), Deadline::after(std::chrono::milliseconds(100)));
      } else {
        parse_store_url(GetParam());
      }
      FAIL() << GetParam() << " was accepted";
    } catch (const InvalidArgument& e) {
      std::string message = e.what();
      // Quoted as given, except for a password ("p%4" below), which is never shown.
      EXPECT_NE(message.find(redact_store_url(GetParam())), std::string::npos) << message;
      EXPECT_EQ(message.find("p%4"), std::string::npos) << message;
      EXPECT_NE(message.find("file:///"), std::string::npos) << message;
      EXPECT_NE(message.find("tcp://host:port"), std::string::npos) << message;
      EXPECT_NE(message.find("redis://[[user]:password@]host"), std::string::npos) << message;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Urls, MalformedStoreUrl,
                         ::testing::Values("", "localhost:29500", "http://host:80", "TCP//host:1",
                                           "tcp://host", "tcp://host:", "tcp://:80", "tcp://host:0",
                                           "tcp://host:65536", "tcp://host:12ab", "tcp://::1:80",
                                           "tcp://[::1:80", "tcp://[::1]80", "tcp://host:80/path",
                                           "file://relative/dir", "file://", "redis://",
                                           "redis://user@host:1", "redis://user:@host:1",
                                           "redis://u%zz:pw@host", "redis://:@host:1",
                                           "redis://host:1/db", "redis://host:1/-1",
                                           "redis://:p%4@host", "redis://host:99999"));

TEST(OpenStore, OpensAFileStoreFromItsUrl) {
  TempDir dir;
  auto store = open_store("file://" + dir.path() + "/nested/store",
                          Deadline::after(std::chrono::seconds(1)));
  store->set("k", to_bytes("v"));
  EXPECT_EQ(to_string(make_file_store(dir.path() + "/nested/store")
                          ->get("k", Deadline::after(std::chrono::seconds(1)))),
            "v");
  EXPECT_EQ(store->describe(), "file://" + dir.path() + "/nested/store");
}

}  // namespace
}  // namespace gloo_lite::test
