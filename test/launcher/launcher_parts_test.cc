// The launcher's parts on their own: command line parsing and line tagging.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tools/launcher_options.h"
#include "tools/launcher_output.h"
#include "tools/launcher_spawn.h"

namespace gloo_lite::launcher {
namespace {

TEST(LauncherOptions, ParsesEveryForm) {
  LauncherOptions a = parse_launcher_args({"-n", "4", "--host", "0.0.0.0", "--timeout", "2.5",
                                           "--grace=1", "--no-prefix", "--", "prog", "-n", "x"});
  EXPECT_EQ(a.ranks, 4);
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_DOUBLE_EQ(a.timeout_s, 2.5);
  EXPECT_DOUBLE_EQ(a.grace_s, 1.0);
  EXPECT_FALSE(a.set_prefix);
  EXPECT_EQ(a.command, (std::vector<std::string>{"prog", "-n", "x"}));

  EXPECT_EQ(parse_launcher_args({"-n3", "prog"}).ranks, 3);
  EXPECT_EQ(parse_launcher_args({"-n=5", "prog"}).ranks, 5);
  EXPECT_EQ(parse_launcher_args({"--np", "6", "prog"}).ranks, 6);
  EXPECT_EQ(parse_launcher_args({"-np", "7", "prog"}).ranks, 7);
  // Options end at the first program argument, even without "--".
  LauncherOptions b = parse_launcher_args({"-n", "2", "prog", "--help"});
  EXPECT_FALSE(b.help);
  EXPECT_EQ(b.command, (std::vector<std::string>{"prog", "--help"}));
  EXPECT_TRUE(parse_launcher_args({"--help"}).help);
  EXPECT_TRUE(parse_launcher_args({"--knobs"}).knobs);
}

TEST(LauncherOptions, RejectsBadInput) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"prog"},
                                             {"-n", "0", "prog"},
                                             {"-n", "-2", "prog"},
                                             {"-n", "4x", "prog"},
                                             {"-n", "99999", "prog"},
                                             {"-n", "2"},
                                             {"-n", "2", "--"},
                                             {"-n"},
                                             {"-n", "2", "--timeout", "soon", "prog"},
                                             {"-n", "2", "--grace", "-1", "prog"},
                                             {"-n", "2", "--host=", "prog"},
                                             {"--frobnicate", "-n", "2", "prog"}}) {
    EXPECT_THROW(parse_launcher_args(args), UsageError) << ::testing::PrintToString(args);
  }
}

// Collects what a LineTagger writes.
class Sink {
 public:
  Sink() { file_ = std::tmpfile(); }
  ~Sink() { std::fclose(file_); }
  int fd() const { return fileno(file_); }
  std::string text() const {
    std::string out;
    char buffer[4096];
    ssize_t n;
    off_t offset = 0;
    while ((n = pread(fd(), buffer, sizeof(buffer), offset)) > 0) {
      out.append(buffer, static_cast<size_t>(n));
      offset += n;
    }
    return out;
  }

 private:
  std::FILE* file_;
};

TEST(LineTagger, TagsWholeLinesAcrossChunks) {
  Sink sink;
  LineTagger tagger("[3] ", sink.fd());
  tagger.feed("he", 2);
  EXPECT_EQ(sink.text(), "");  // nothing until the line is complete
  tagger.feed("llo\nwor", 7);
  EXPECT_EQ(sink.text(), "[3] hello\n");
  tagger.feed("ld\n\nlast", 8);
  EXPECT_EQ(sink.text(), "[3] hello\n[3] world\n[3] \n");
  tagger.finish();
  EXPECT_EQ(sink.text(), "[3] hello\n[3] world\n[3] \n[3] last\n");
  tagger.finish();  // nothing left
  EXPECT_EQ(sink.text(), "[3] hello\n[3] world\n[3] \n[3] last\n");
}

TEST(LineTagger, CutsOverlongLines) {
  Sink sink;
  LineTagger tagger("[0] ", sink.fd());
  std::string big(LineTagger::kMaxLine + 10, 'x');
  tagger.feed(big.data(), big.size());
  tagger.finish();
  std::string expected = "[0] " + std::string(LineTagger::kMaxLine, 'x') + "\n[0] xxxxxxxxxx\n";
  EXPECT_EQ(sink.text(), expected);
}

TEST(FindProgram, SearchesPath) {
  EXPECT_EQ(find_program("sh").empty(), false);
  EXPECT_EQ(find_program("./relative/prog"), "./relative/prog");
  EXPECT_EQ(find_program("no-such-program-xyz"), "");
  EXPECT_EQ(find_program(""), "");
}

}  // namespace
}  // namespace gloo_lite::launcher
