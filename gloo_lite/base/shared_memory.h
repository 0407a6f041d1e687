// Shared memory between processes of one host that leaves nothing behind: an anonymous memfd,
// sealed against resizing, opened by the other processes through /proc/<pid>/fd/<fd> of its
// creator. Nothing ever appears in /dev/shm, and the memory goes away with the last mapping or
// descriptor (SIGKILL included). The one segment type of gloo_lite: the shared-memory
// transport's per-rank segments (transport_shm/segment.h lays its rings out in one) and the
// shared-memory collectives' (gloo_lite/shm/host_segment.h). Also a watch on a peer process, to
// notice that it died.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gloo_lite {

class SharedMemory {
 public:
  // A fresh zero-filled region of `bytes`, named `name` (/proc/<pid>/maps shows memfd:<name>),
  // sealed against shrinking and growing so that peers may trust its size. Its first
  // `reserve_bytes` are reserved at once (posix_fallocate), so that a full memory limit is a
  // ConnectionError here (naming `what`, the size and `remedy`), never a SIGBUS at first touch;
  // the rest stays sparse until reserve().
  static std::unique_ptr<SharedMemory> create(const std::string& what, const std::string& name,
                                              size_t bytes, size_t reserve_bytes,
                                              const std::string& remedy);
  // Maps the whole region that process `pid` holds as descriptor `fd`. Throws ConnectionError
  // naming `what` when that process is gone (or in another PID namespace, or another user's),
  // or the descriptor is not a region sealed against resizing (not ours, or forged).
  static std::unique_ptr<SharedMemory> open(const std::string& what, pid_t pid, int fd);
  // The same from a handle() another process published; its size must be the announced one.
  static std::unique_ptr<SharedMemory> open(const std::string& what, const std::string& handle);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // The creator's descriptor (what peers open), until close_handle(); -1 in a peer.
  int fd() const { return fd_; }
  // Reserves the pages of [offset, offset + bytes) (creator only); 0, or posix_fallocate's
  // error (ENOSPC: shared memory is full or limited).
  int reserve(size_t offset, size_t bytes);
  // "pid fd bytes": what open(what, handle) needs. Valid until close_handle().
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
