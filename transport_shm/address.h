// Internal: a shared-memory mesh's address,
// "shm2,<pid>,<fd>,<nonce>,<shm dev>,<user ns>,<pid ns>,<host>":
// where its segment is (a memfd that peers open as /proc/<pid>/fd/<fd>, holding `nonce`) and
// the facts that decide whether two ranks can share memory at all: the same kernel (boot id),
// the same /dev/shm device, the same user namespace and the same pid namespace (peers open
// /proc/<pid>/fd/<fd> and read /proc/<pid>: a pid means nothing in another one). No spaces:
// contexts publish addresses in whitespace-separated records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gloo_lite::shm {

struct Address {
  int pid = 0;
  int fd = -1;
  uint64_t nonce = 0;
  uint64_t shm_device = 0;  // st_dev of /dev/shm
  uint64_t user_ns = 0;     // st_ino of /proc/self/ns/user
  uint64_t pid_ns = 0;      // st_ino of /proc/self/ns/pid
  std::string host;         // gloo_lite::host_identity()

  std::string encode() const;
  static std::optional<Address> parse(const std::string& text);
  // The same machine, /dev/shm, user and pid namespace: this pair may share memory.
  bool shares_memory_with(const Address& other) const {
    return host == other.host && shm_device == other.shm_device && user_ns == other.user_ns &&
           pid_ns == other.pid_ns;
  }
};

// This process's facts (pid, /dev/shm device, user and pid namespace, host); fd and nonce left
// unset.
Address local_address();

}  // namespace gloo_lite::shm
