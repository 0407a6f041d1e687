#include "test/security/security_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "transport_tcp/tcp_device.h"

namespace gloo_lite::test {

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value != nullptr) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
}

StderrToFile::StderrToFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  saved_ = ::dup(2);
  ::dup2(fd, 2);
  ::close(fd);
}

StderrToFile::~StderrToFile() {
  if (saved_ >= 0) {
    ::dup2(saved_, 2);
    ::close(saved_);
  }
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string read_directory_files(const std::string& directory) {
  std::string all;
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return all;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    std::string path = directory + "/" + name;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      all += read_directory_files(path);
    } else if (S_ISREG(info.st_mode)) {
      all += name + "\n" + read_whole_file(path) + "\n";
    }
  }
  ::closedir(dir);
  return all;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

std::shared_ptr<transport::Device> tcp_loopback_device() {
  tcp::DeviceOptions options;
  options.hostname = "127.0.0.1";
  return tcp::create_device(options);
}

}  // namespace gloo_lite::test
