// What the file store leaves on disk: safe names, no temporaries, bounded path components.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "gloo_lite/base/error.h"
#include "rendezvous/stores.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

namespace fs = std::filesystem;

TEST(FileStore, EncodesKeysIntoSafeFileNames) {
  TempDir dir;
  auto store = make_file_store(dir.path());
  for (const char* key : {"a/b", "..", ".", "", "x y%", "/lead"}) store->set(key, to_bytes(key));
  store->add("count/er", 1);
  std::regex safe("^[kl]\\.[A-Za-z0-9._%-]*$");
  int values = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    std::string name = entry.path().filename().string();
    EXPECT_TRUE(entry.is_regular_file()) << name;
    EXPECT_TRUE(std::regex_match(name, safe)) << name;
    if (name[0] == 'k') ++values;
  }
  EXPECT_EQ(values, 7);
  auto deadline = Deadline::after(std::chrono::seconds(1));
  for (const char* key : {"a/b", "..", ".", "", "x y%", "/lead"}) {
    EXPECT_EQ(to_string(store->get(key, deadline)), key);
  }
}

TEST(FileStore, LongKeysFitFileNameLimits) {
  TempDir dir;
  auto store = make_file_store(dir.path());
  std::string key(1000, '/');  // every byte escaped: 3000 encoded characters
  store->set(key, to_bytes("deep"));
  EXPECT_EQ(to_string(store->get(key, Deadline::after(std::chrono::seconds(1)))), "deep");
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
    EXPECT_LE(entry.path().filename().string().size(), 255u);
  }
  EXPECT_TRUE(store->erase(key));
  EXPECT_FALSE(store->check({key}));
  try {
    store->set(std::string(4000, '/'), to_bytes("too deep"));
    FAIL() << "a key beyond PATH_MAX was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("too long"), std::string::npos) << e.what();
  }
}

TEST(FileStore, LeavesNoTemporaryFiles) {
  TempDir dir;
  auto store = make_file_store(dir.path());
  for (int i = 0; i < 20; ++i) store->set("k" + std::to_string(i % 3), Bytes(1000, 'x'));
  for (int i = 0; i < 20; ++i) store->add("n", 1);
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_NE(entry.path().filename().string().rfind("t.", 0), 0u) << entry.path();
  }
}

TEST(FileStore, SeesValuesWrittenBehindItsBack) {
  // A write by another NFS client raises no inotify event here. A hard link made from outside
  // the directory raises none that the store watches for either, so only the backoff can
  // notice it, as it must on NFS.
  TempDir dir;
  TempDir outside;
  auto store = make_file_store(dir.path());
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string staged = outside.path() + "/staged";
    FILE* f = fopen(staged.c_str(), "w");
    fputs("remote", f);
    fclose(f);
    fs::create_hard_link(staged, dir.path() + "/k.remote");
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(to_string(store->get("remote", Deadline::after(std::chrono::seconds(5)))), "remote");
  // The backoff is capped at 50 ms, so the write is seen well within half a second.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(600));
  writer.join();
}

TEST(FileStore, UnusableDirectoryIsAStoreError) {
  TempDir dir;
  std::string file = dir.path() + "/plain-file";
  fclose(fopen(file.c_str(), "w"));
  EXPECT_THROW(make_file_store(file + "/sub"), StoreError);
  EXPECT_THROW(make_file_store(""), InvalidArgument);
}

}  // namespace
}  // namespace gloo_lite::test
