// Which local address the TCP transport listens on and publishes to peers.
#pragma once

#include <string>
#include <vector>

#include "gloo_lite/base/socket.h"

namespace gloo_lite::tcp {

struct InterfaceAddress {
  std::string interface;  // "eth0"
  SocketAddress address;  // port 0
  bool loopback = false;  // IFF_LOOPBACK or a loopback address (127/8, ::1)
};

// Every up interface's IPv4 and IPv6 addresses (IPv6 link-local excluded).
std::vector<InterfaceAddress> list_interface_addresses();

// Picks the address to use:
//  - `hostname` non-empty (GLOO_LITE_HOSTNAME): that host's address;
//  - else `ifname_spec` (GLOO_LITE_IFNAME): comma-separated prefixes ("eth,ib"), "^" in front
//    excludes ("^docker,lo"), "=" in front matches names exactly ("=eth0"). A "^" or "=" at the
//    start of the spec applies to every item (as NCCL_SOCKET_IFNAME); on one item, to that
//    item only ("eth,^eth2"). Earlier items are preferred ("ib,eth": ib0 before eth0);
//  - else the first non-loopback interface, preferring IPv4, falling back to loopback.
// Within the chosen candidates: non-loopback before loopback, IPv4 before IPv6, then the
// kernel's interface order. Interfaces that are down are never chosen.
// Throws InvalidArgument naming the spec and the interfaces that exist when nothing matches.
SocketAddress select_address(const std::string& hostname, const std::string& ifname_spec);

}  // namespace gloo_lite::tcp
