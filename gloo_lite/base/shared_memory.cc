#include "gloo_lite/base/shared_memory.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"

namespace gloo_lite {
namespace {

std::string errno_text(int error) { return std::strerror(error); }

constexpr int kResizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;

uint8_t* map(const std::string& what, int fd, size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    int error = errno;
    throw ConnectionError(what + ": mmap of " + std::to_string(bytes) +
                          " bytes of shared memory failed: " + errno_text(error));
  }
  return static_cast<uint8_t*>(data);
}

}  // namespace

std::unique_ptr<SharedMemory> SharedMemory::create(const std::string& what, const std::string& name,
                                                   size_t bytes, size_t reserve_bytes,
                                                   const std::string& remedy) {
  // Sealable: once sized, the size is sealed, so that peers may trust their mapping.
  Fd fd(static_cast<int>(syscall(SYS_memfd_create, name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (!fd.valid()) {
    int error = errno;
    throw ConnectionError(what + ": memfd_create failed: " + errno_text(error) + "; " + remedy);
  }
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    int error = errno;
    throw ConnectionError(what + ": cannot size a shared-memory segment of " +
                          std::to_string(bytes) + " bytes: " + errno_text(error) + "; " + remedy);
  }
  // Nobody (a peer with the descriptor included) can shrink it under a mapping (SIGBUS) or grow
  // it; reserve() still allocates pages inside it (fallocate within the size is allowed).
  if (fcntl(fd.get(), F_ADD_SEALS, kResizeSeals | F_SEAL_SEAL) != 0) {
    int error = errno;
    throw ConnectionError(what + ": cannot seal a shared-memory segment: " + errno_text(error) +
                          "; " + remedy);
  }
  auto memory =
      std::unique_ptr<SharedMemory>(new SharedMemory(map(what, fd.get(), bytes), bytes, fd.get()));
  fd.release();
  if (int error = memory->reserve(0, std::min(reserve_bytes, bytes)); error != 0) {
    throw ConnectionError(what + ": could not reserve " + std::to_string(reserve_bytes) +
                          " bytes of shared memory (" + errno_text(error) +
                          "): shared memory is full or limited; " + remedy);
  }
  return memory;
}

int SharedMemory::reserve(size_t offset, size_t bytes) {
  if (bytes == 0) return 0;
  // posix_fallocate reports its error as the return value, not in errno.
  return posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes));
}

std::unique_ptr<SharedMemory> SharedMemory::open(const std::string& what, pid_t pid, int fd) {
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  Fd opened(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!opened.valid()) {
    int error = errno;
    throw ConnectionError(what + ": cannot open the shared-memory segment at " + path + ": " +
                          errno_text(error) +
                          (error == ENOENT ? " (that process is gone: a stale address from an "
                                             "earlier job, or it failed)"
                                           : " (another PID namespace or user?)"));
  }
  // A segment its owner could shrink would SIGBUS us on the next access.
  int seals = fcntl(opened.get(), F_GET_SEALS);
  if (seals < 0 || (seals & kResizeSeals) != kResizeSeals) {
    throw ConnectionError(what + ": the descriptor at " + path +
                          " is not sealed against resizing (F_SEAL_SHRINK, F_SEAL_GROW): not a "
                          "gloo_lite segment, or a forged one");
  }
  struct stat status {};
  if (fstat(opened.get(), &status) != 0 || status.st_size <= 0) {
    throw ConnectionError(what + ": the segment at " + path + " is empty");
  }
  size_t bytes = static_cast<size_t>(status.st_size);
  // The mapping keeps the memory: the descriptor closes here.
  return std::unique_ptr<SharedMemory>(new SharedMemory(map(what, opened.get(), bytes), bytes, -1));
}

std::unique_ptr<SharedMemory> SharedMemory::open(const std::string& what,
                                                 const std::string& handle) {
  std::istringstream in(handle);
  long pid = 0;
  int remote_fd = -1;
  size_t bytes = 0;
  if (!(in >> pid >> remote_fd >> bytes)) {
    throw ConnectionError(what + ": malformed shared memory handle '" + handle + "'");
  }
  auto memory = open(what, static_cast<pid_t>(pid), remote_fd);
  if (memory->bytes() != bytes) {
    throw ConnectionError(what + ": the segment of pid " + std::to_string(pid) + " is not the " +
                          std::to_string(bytes) + " bytes announced");
  }
  return memory;
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
