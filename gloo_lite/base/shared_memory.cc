#include "gloo_lite/base/shared_memory.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gloo_lite/base/error.h"

namespace gloo_lite {
namespace {

std::string errno_text(int error) { return std::strerror(error); }

uint8_t* map(const std::string& what, int fd, size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    int error = errno;
    throw Error(what + ": mmap of " + std::to_string(bytes) +
                " bytes of shared memory failed: " + errno_text(error));
  }
  return static_cast<uint8_t*>(data);
}

}  // namespace

std::unique_ptr<SharedMemory> SharedMemory::create(const std::string& what, size_t bytes) {
  int fd = static_cast<int>(syscall(SYS_memfd_create, "gloo_lite", MFD_CLOEXEC));
  if (fd < 0) {
    int error = errno;
    throw Error(what + ": memfd_create failed: " + errno_text(error));
  }
  // posix_fallocate reports its error as the return value, not in errno.
  int error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (error != 0) {
    close(fd);
    throw Error(what + ": could not reserve " + std::to_string(bytes) +
                " bytes of shared memory (" + errno_text(error) +
                "); free memory, raise the memory limit, or lower GLOO_LITE_SHM_CHUNK_BYTES");
  }
  try {
    return std::unique_ptr<SharedMemory>(new SharedMemory(map(what, fd, bytes), bytes, fd));
  } catch (...) {
    close(fd);
    throw;
  }
}

std::unique_ptr<SharedMemory> SharedMemory::open(const std::string& what,
                                                 const std::string& handle) {
  std::istringstream in(handle);
  long pid = 0;
  int remote_fd = -1;
  size_t bytes = 0;
  if (!(in >> pid >> remote_fd >> bytes)) {
    throw Error(what + ": malformed shared memory handle '" + handle + "'");
  }
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(remote_fd);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    throw Error(what + ": cannot open the creator's segment " + path + " (" + errno_text(error) +
                "): the creator exited, or runs in another PID namespace or as another user");
  }
  struct stat status {};
  if (fstat(fd, &status) != 0 || static_cast<size_t>(status.st_size) != bytes) {
    close(fd);
    throw Error(what + ": the segment at " + path + " is not the " + std::to_string(bytes) +
                " bytes announced");
  }
  uint8_t* data = nullptr;
  try {
    data = map(what, fd, bytes);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);  // the mapping keeps the memory
  return std::unique_ptr<SharedMemory>(new SharedMemory(data, bytes, -1));
}

SharedMemory::~SharedMemory() {
  munmap(data_, bytes_);
  close_handle();
}

std::string SharedMemory::handle() const {
  return std::to_string(getpid()) + " " + std::to_string(fd_) + " " + std::to_string(bytes_);
}

void SharedMemory::close_handle() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

ProcessWatch::ProcessWatch(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#endif
}

ProcessWatch::~ProcessWatch() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool ProcessWatch::exited() const {
  if (pidfd_ >= 0) {
    // A pidfd polls readable once the process has terminated.
    pollfd entry{pidfd_, POLLIN, 0};
    return poll(&entry, 1, 0) > 0;
  }
  // Without pidfds: gone, or a zombie that its parent has not reaped yet.
  std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] == 'Z' ||
         text[paren + 2] == 'X';
}

}  // namespace gloo_lite
