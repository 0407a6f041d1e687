// Tags every line a rank prints with "[rank] " and writes whole lines only, so that the output
// of concurrent ranks never interleaves mid-line.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace gloo_lite::launcher {

class LineTagger {
 public:
  // Lines longer than this are cut (each piece tagged) so one rank cannot make the launcher
  // buffer without bound.
  static constexpr size_t kMaxLine = 1 << 20;

  LineTagger(std::string tag, int out_fd) : tag_(std::move(tag)), out_fd_(out_fd) {}

  // Takes the next bytes of the stream; writes every line completed so far, in one write.
  void feed(const char* data, size_t bytes);
  // End of stream: writes a trailing partial line, newline-terminated.
  void finish();

 private:
  void emit(const std::string& text);

  std::string tag_;
  int out_fd_;
  std::string pending_;  // the start of an unfinished line
};

// Writes all of `text` to `fd`, retrying short writes; gives up silently when the reader is gone
// (EPIPE), since a closed terminal must not stop the job.
void write_whole(int fd, const std::string& text);

}  // namespace gloo_lite::launcher
