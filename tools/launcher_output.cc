#include "tools/launcher_output.h"

#include <unistd.h>

#include <cerrno>

namespace gloo_lite::launcher {

void write_whole(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void LineTagger::feed(const char* data, size_t bytes) {
  std::string out;
  size_t start = 0;
  for (size_t i = 0; i < bytes; ++i) {
    if (data[i] != '\n') continue;
    out += tag_;
    out += pending_;
    out.append(data + start, i + 1 - start);
    pending_.clear();
    start = i + 1;
  }
  pending_.append(data + start, bytes - start);
  while (pending_.size() >= kMaxLine) {
    out += tag_;
    out.append(pending_, 0, kMaxLine);
    out += '\n';
    pending_.erase(0, kMaxLine);
  }
  emit(out);
}

void LineTagger::finish() {
  if (pending_.empty()) return;
  std::string out = tag_ + pending_ + "\n";
  pending_.clear();
  emit(out);
}

void LineTagger::emit(const std::string& text) {
  if (!text.empty()) write_whole(out_fd_, text);
}

}  // namespace gloo_lite::launcher
