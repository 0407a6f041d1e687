#include "transport_tcp/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <tuple>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

namespace gloo_lite::tcp {
namespace {

// One getifaddrs() entry of interest: every interface shows up at least once (its AF_PACKET
// entry), so the error messages can name interfaces that are down or have no address.
struct RawEntry {
  std::string interface;
  bool up = false;
  bool loopback = false;
  bool has_address = false;  // an IPv4 or (non-link-local) IPv6 address
  SocketAddress address;
};

struct IfaddrsFree {
  void operator()(ifaddrs* list) const { freeifaddrs(list); }
};

std::vector<RawEntry> read_interfaces() {
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) {
    throw ConnectionError(std::string("getifaddrs() failed: ") + std::strerror(errno));
  }
  std::unique_ptr<ifaddrs, IfaddrsFree> list(raw);
  std::vector<RawEntry> entries;
  for (const ifaddrs* ifa = list.get(); ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_name == nullptr) continue;
    RawEntry entry;
    entry.interface = ifa->ifa_name;
    entry.up = (ifa->ifa_flags & IFF_UP) != 0;
    entry.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    const sockaddr* sa = ifa->ifa_addr;
    if (sa != nullptr && sa->sa_family == AF_INET) {
      std::memcpy(&entry.address.storage, sa, sizeof(sockaddr_in));
      entry.address.length = sizeof(sockaddr_in);
      entry.has_address = true;
    } else if (sa != nullptr && sa->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(sa);
      // Link-local addresses need a scope id on every peer; useless across hosts.
      if (!IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) {
        std::memcpy(&entry.address.storage, sa, sizeof(sockaddr_in6));
        entry.address.length = sizeof(sockaddr_in6);
        entry.has_address = true;
      }
    }
    if (entry.has_address) {
      entry.address.set_port(0);
      entry.loopback = entry.loopback || entry.address.is_loopback();
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// "lo (127.0.0.1, ::1), eth0 (192.0.2.2), docker0 (down)": what exists, for error messages.
std::string describe_interfaces(const std::vector<RawEntry>& entries) {
  std::vector<std::string> order;
  for (const auto& entry : entries) {
    if (std::find(order.begin(), order.end(), entry.interface) == order.end()) {
      order.push_back(entry.interface);
    }
  }
  std::string text;
  for (const auto& name : order) {
    bool up = false;
    std::string addresses;
    for (const auto& entry : entries) {
      if (entry.interface != name) continue;
      up = up || entry.up;
      if (entry.has_address) {
        addresses += (addresses.empty() ? "" : ", ") + entry.address.host();
      }
    }
    if (!text.empty()) text += "; ";
    text += name + " (";
    if (!up) text += "down";
    if (!up && !addresses.empty()) text += ", ";
    text += addresses.empty() && up ? "no address" : addresses;
    text += ")";
  }
  return text.empty() ? "none" : text;
}

// A parsed GLOO_LITE_IFNAME.
//   "eth,ib"       names starting with eth or ib, in that order of preference
//   "^docker,lo"   a leading ^ excludes every listed prefix
//   "=eth0,=eth1"  = matches a name exactly; "^=docker0" excludes exactly one name
//   "eth,^eth2"    a ^ on one item excludes just that item
struct Pattern {
  std::string text;
  bool exact = false;
  bool matches(const std::string& name) const {
    return exact ? name == text : name.compare(0, text.size(), text) == 0;
  }
};

struct IfnameSpec {
  std::vector<Pattern> include;
  std::vector<Pattern> exclude;

  // Index of the first include pattern matching `name` (0 when there are none), or -1 when
  // the name is not selected.
  int rank_of(const std::string& name) const {
    for (const auto& pattern : exclude) {
      if (pattern.matches(name)) return -1;
    }
    if (include.empty()) return 0;
    for (size_t i = 0; i < include.size(); ++i) {
      if (include[i].matches(name)) return static_cast<int>(i);
    }
    return -1;
  }
};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

IfnameSpec parse_spec(const std::string& spec) {
  std::string rest = trim(spec);
  bool exclude_all = false;
  bool exact_all = false;
  if (!rest.empty() && rest[0] == '^') exclude_all = true, rest.erase(0, 1);
  if (!rest.empty() && rest[0] == '=') exact_all = true, rest.erase(0, 1);
  IfnameSpec parsed;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    if (comma == std::string::npos) comma = rest.size();
    std::string item = trim(rest.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) continue;
    bool exclude = exclude_all;
    bool exact = exact_all;
    if (item[0] == '^') exclude = true, item.erase(0, 1);
    if (!item.empty() && item[0] == '=') exact = true, item.erase(0, 1);
    if (item.empty()) {
      throw InvalidArgument("GLOO_LITE_IFNAME='" + spec +
                            "' has an empty item; write e.g. 'eth', '=eth0' or '^docker,lo'");
    }
    (exclude ? parsed.exclude : parsed.include).push_back(Pattern{item, exact});
  }
  if (parsed.include.empty() && parsed.exclude.empty()) {
    throw InvalidArgument("GLOO_LITE_IFNAME='" + spec +
                          "' names no interface; write e.g. 'eth', '=eth0' or '^docker,lo'");
  }
  return parsed;
}

}  // namespace

std::vector<InterfaceAddress> list_interface_addresses() {
  std::vector<InterfaceAddress> result;
  for (const auto& entry : read_interfaces()) {
    if (!entry.up || !entry.has_address) continue;
    result.push_back(InterfaceAddress{entry.interface, entry.address, entry.loopback});
  }
  return result;
}

SocketAddress select_address(const std::string& hostname, const std::string& ifname_spec) {
  if (!hostname.empty()) {
    if (!ifname_spec.empty()) {
      LOG_INFO("tcp",
               "GLOO_LITE_HOSTNAME=" << hostname << " overrides GLOO_LITE_IFNAME=" << ifname_spec);
    }
    return SocketAddress::resolve(hostname, 0);
  }
  const std::vector<RawEntry> entries = read_interfaces();
  const bool have_spec = !trim(ifname_spec).empty();
  const IfnameSpec spec = have_spec ? parse_spec(ifname_spec) : IfnameSpec{};

  // Preference, smallest first: the earlier matching item of the spec, then non-loopback,
  // then IPv4, then the kernel's interface order.
  using Key = std::tuple<int, bool, bool, size_t>;
  const RawEntry* best = nullptr;
  Key best_key{};
  bool matched_any_name = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    const RawEntry& entry = entries[i];
    int item = spec.rank_of(entry.interface);
    if (item < 0) continue;
    matched_any_name = true;
    if (!entry.up || !entry.has_address) continue;
    Key key{item, entry.loopback, entry.address.family() != AF_INET, i};
    if (best == nullptr || key < best_key) best = &entry, best_key = key;
  }
  if (best != nullptr) {
    if (!have_spec && best->loopback) {
      LOG_INFO("tcp", "no non-loopback interface is up; using " << best->interface << " ("
                                                                << best->address.host()
                                                                << "), reachable only locally");
    }
    return best->address;
  }
  const std::string existing = describe_interfaces(entries);
  if (!have_spec) {
    throw InvalidArgument("no network interface is up with an IPv4 or IPv6 address (interfaces: " +
                          existing + "); bring one up or set GLOO_LITE_HOSTNAME");
  }
  throw InvalidArgument(
      "GLOO_LITE_IFNAME='" + ifname_spec + "' " +
      (matched_any_name ? "matches only interfaces that are down or have no usable address"
                        : "matches no interface") +
      "; interfaces here: " + existing +
      ". Use prefixes ('eth'), exact names ('=eth0') or exclusions ('^docker,lo')");
}

}  // namespace gloo_lite::tcp
