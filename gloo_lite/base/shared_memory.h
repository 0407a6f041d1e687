// Shared memory between processes of one host that leaves nothing behind: an anonymous memfd,
// its space reserved up front, opened by the other processes through /proc/<pid>/fd/<fd> of
// its creator. Nothing ever appears in /dev/shm, and the memory goes away with the last mapping
// (SIGKILL included). Also a watch on a peer process, to notice that it died.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

namespace gloo_lite {

class SharedMemory {
 public:
  // A fresh zero-filled region of `bytes`, reserved with posix_fallocate so that a full memory
  // limit is an Error here (naming `what` and the size), never a SIGBUS at first touch.
  static std::unique_ptr<SharedMemory> create(const std::string& what, size_t bytes);
  // Maps the region whose handle() another process published. Throws Error naming `what` when
  // the creator is gone, is in another PID namespace, or the size disagrees.
  static std::unique_ptr<SharedMemory> open(const std::string& what, const std::string& handle);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // "pid fd bytes": what open() needs. Valid until close_handle().
  std::string handle() const;
  // The creator closes its descriptor once every peer has mapped the region: from then on
  // nobody else can open it, and it lives exactly as long as the mappings.
  void close_handle();

 private:
  SharedMemory(uint8_t* data, size_t bytes, int fd) : data_(data), bytes_(bytes), fd_(fd) {}
  uint8_t* data_;
  size_t bytes_;
  int fd_;  // the creator's descriptor until close_handle(), else -1
};

// Watches one process of this host (a pidfd where the kernel has them, else /proc): exited()
// is true once it has terminated, zombies included, and never mistakes a reused pid for it.
class ProcessWatch {
 public:
  explicit ProcessWatch(pid_t pid);
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;
  pid_t pid() const { return pid_; }
  bool exited() const;

 private:
  pid_t pid_;
  int pidfd_ = -1;
};

}  // namespace gloo_lite
