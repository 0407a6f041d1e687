#include "transport_shm/address.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "gloo_lite/base/host.h"

namespace gloo_lite::shm {
namespace {

constexpr const char* kPrefix = "shm2";
constexpr int kNumbers = 6;  // pid, fd, nonce, /dev/shm device, user ns, pid ns

uint64_t inode_or_zero(const char* path, bool device) {
  struct stat info {};
  if (::stat(path, &info) != 0) return 0;
  return device ? static_cast<uint64_t>(info.st_dev) : static_cast<uint64_t>(info.st_ino);
}

bool parse_u64(const std::string& text, uint64_t* value) {
  if (text.empty() || text.size() > 20) return false;
  char* end = nullptr;
  *value = std::strtoull(text.c_str(), &end, 10);
  return end != nullptr && *end == '\0';
}

}  // namespace

std::string Address::encode() const {
  return std::string(kPrefix) + "," + std::to_string(pid) + "," + std::to_string(fd) + "," +
         std::to_string(nonce) + "," + std::to_string(shm_device) + "," + std::to_string(user_ns) +
         "," + std::to_string(pid_ns) + "," + host;
}

std::optional<Address> Address::parse(const std::string& text) {
  // The host comes last and may hold anything but spaces, commas included.
  std::vector<std::string> fields;
  size_t begin = 0;
  while (fields.size() < 1 + kNumbers) {
    size_t comma = text.find(',', begin);
    if (comma == std::string::npos) return std::nullopt;
    fields.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  if (fields[0] != kPrefix || begin >= text.size()) return std::nullopt;
  uint64_t numbers[kNumbers];
  for (int i = 0; i < kNumbers; ++i) {
    if (!parse_u64(fields[i + 1], &numbers[i])) return std::nullopt;
  }
  if (numbers[0] == 0 || numbers[0] > 0x7fffffff || numbers[1] > 0x7fffffff) return std::nullopt;
  Address address;
  address.pid = static_cast<int>(numbers[0]);
  address.fd = static_cast<int>(numbers[1]);
  address.nonce = numbers[2];
  address.shm_device = numbers[3];
  address.user_ns = numbers[4];
  address.pid_ns = numbers[5];
  address.host = text.substr(begin);
  return address;
}

Address local_address() {
  Address address;
  address.pid = static_cast<int>(::getpid());
  address.shm_device = inode_or_zero("/dev/shm", /*device=*/true);
  address.user_ns = inode_or_zero("/proc/self/ns/user", /*device=*/false);
  address.pid_ns = inode_or_zero("/proc/self/ns/pid", /*device=*/false);
  address.host = host_identity();
  return address;
}

}  // namespace gloo_lite::shm
