#include "gloo_lite/base/host.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <utility>

#include "gloo_lite/base/config.h"

namespace gloo_lite {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;  // not produced by usable_cpu_mask; a foreign character counts as no CPUs
}

std::string strip_leading_zeros(std::string mask) {
  size_t first = mask.find_first_not_of('0');
  return first == std::string::npos ? "0" : mask.substr(first);
}

// N CPUs as a mask: the low N bits set.
std::string mask_of_count(int64_t count) {
  std::string mask;
  for (; count >= 4; count -= 4) mask += 'f';
  if (count > 0) mask.insert(mask.begin(), "0137"[count]);
  return mask.empty() ? "0" : mask;
}

}  // namespace

std::string host_identity() {
  if (std::string id = knob_string("GLOO_LITE_HOST_ID"); !id.empty()) {
    std::replace(id.begin(), id.end(), ' ', '_');
    return "id:" + id;
  }
  std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (boot_id >> id && !id.empty()) return "boot:" + id;
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string host(name);
  std::replace(host.begin(), host.end(), ' ', '_');
  return "host:" + (host.empty() ? std::string("unknown") : host);
}

std::string usable_cpu_mask() {
  if (int64_t cores = knob_int("GLOO_LITE_CORES"); cores > 0) return mask_of_count(cores);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return mask_of_count(online > 0 ? online : 1);
  }
  std::string mask;
  for (int base = 0; base < CPU_SETSIZE; base += 4) {
    int digit = 0;
    for (int bit = 0; bit < 4; ++bit) {
      if (CPU_ISSET(base + bit, &set)) digit |= 1 << bit;
    }
    mask.insert(mask.begin(), "0123456789abcdef"[digit]);
  }
  return strip_leading_zeros(mask);
}

std::string merge_cpu_masks(const std::string& a, const std::string& b) {
  std::string merged(std::max(a.size(), b.size()), '0');
  for (size_t i = 0; i < merged.size(); ++i) {  // i counts digits from the lowest
    int x = i < a.size() ? hex_digit(a[a.size() - 1 - i]) : 0;
    int y = i < b.size() ? hex_digit(b[b.size() - 1 - i]) : 0;
    merged[merged.size() - 1 - i] = "0123456789abcdef"[x | y];
  }
  return strip_leading_zeros(merged);
}

int count_cpus(const std::string& mask) {
  int count = 0;
  for (char c : mask) count += __builtin_popcount(static_cast<unsigned>(hex_digit(c)));
  return count;
}

double ranks_per_core(int ranks, double cpus) { return ranks / std::max(1.0, cpus); }

double busiest_host_load(const std::vector<std::string>& hosts,
                         const std::vector<std::string>& masks) {
  std::map<std::string, std::pair<int, std::string>> by_host;  // ranks, merged mask
  for (size_t r = 0; r < hosts.size(); ++r) {
    auto& [ranks, mask] = by_host[hosts[r]];
    ranks += 1;
    mask = merge_cpu_masks(mask, masks[r]);
  }
  double load = 0;
  for (const auto& [host, group] : by_host) {
    load = std::max(load, ranks_per_core(group.first, count_cpus(group.second)));
  }
  return load;
}

}  // namespace gloo_lite
