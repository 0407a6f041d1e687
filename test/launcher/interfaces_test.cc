// Interface selection (GLOO_LITE_IFNAME, GLOO_LITE_HOSTNAME) on this host's loopback, and on
// made-up interfaces inside a private network namespace when we may create one.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gloo_lite/base/error.h"
#include "test/support/test_support.h"
#include "transport_tcp/interfaces.h"

namespace gloo_lite::tcp {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The InvalidArgument message of select_address, or "" when it did not throw.
std::string selection_error(const std::string& hostname, const std::string& spec) {
  try {
    select_address(hostname, spec);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

bool have_up_non_loopback() {
  for (const auto& entry : list_interface_addresses()) {
    if (!entry.loopback) return true;
  }
  return false;
}

TEST(Interfaces, ListsLoopback) {
  bool found = false;
  for (const auto& entry : list_interface_addresses()) {
    EXPECT_EQ(entry.address.port(), 0);
    EXPECT_TRUE(entry.address.family() == AF_INET || entry.address.family() == AF_INET6);
    if (entry.interface == "lo" && entry.address.host() == "127.0.0.1") {
      found = true;
      EXPECT_TRUE(entry.loopback);
    }
  }
  EXPECT_TRUE(found) << "lo with 127.0.0.1 should be up";
}

TEST(Interfaces, ExactAndPrefixLoopback) {
  EXPECT_EQ(select_address("", "=lo").host(), "127.0.0.1");
  EXPECT_EQ(select_address("", "lo").host(), "127.0.0.1");
  EXPECT_EQ(select_address("", " =lo ").host(), "127.0.0.1");
  EXPECT_EQ(select_address("", "=lo").port(), 0);
}

TEST(Interfaces, ExcludingLoopback) {
  if (have_up_non_loopback()) {
    EXPECT_FALSE(select_address("", "^lo").is_loopback());
    EXPECT_FALSE(select_address("", "^=lo").is_loopback());
  } else {
    EXPECT_THROW(select_address("", "^lo"), InvalidArgument);
  }
}

TEST(Interfaces, DefaultPrefersNonLoopbackIpv4) {
  SocketAddress chosen = select_address("", "");
  bool non_loopback_v4 = false;
  for (const auto& entry : list_interface_addresses()) {
    non_loopback_v4 = non_loopback_v4 || (!entry.loopback && entry.address.family() == AF_INET);
  }
  if (have_up_non_loopback()) {
    EXPECT_FALSE(chosen.is_loopback()) << chosen.to_string();
  }
  if (non_loopback_v4) {
    EXPECT_EQ(chosen.family(), AF_INET) << chosen.to_string();
  }
}

TEST(Interfaces, NoMatchNamesTheSpecAndTheInterfaces) {
  std::string error = selection_error("", "=nosuchif0");
  EXPECT_TRUE(contains(error, "GLOO_LITE_IFNAME='=nosuchif0'")) << error;
  EXPECT_TRUE(contains(error, "matches no interface")) << error;
  EXPECT_TRUE(contains(error, "lo (")) << error;
  EXPECT_TRUE(contains(error, "127.0.0.1")) << error;
  // Exact means exact: "=l" is not "lo".
  EXPECT_FALSE(selection_error("", "=l").empty());
  EXPECT_FALSE(selection_error("", "=lo,^lo").empty()) << "exclusion wins";
}

TEST(Interfaces, MalformedSpecs) {
  EXPECT_TRUE(contains(selection_error("", ","), "names no interface"));
  EXPECT_TRUE(contains(selection_error("", "^"), "names no interface"));
  EXPECT_TRUE(contains(selection_error("", "lo,^"), "empty item"));
  EXPECT_TRUE(contains(selection_error("", "="), "names no interface"));
  EXPECT_TRUE(contains(selection_error("", "lo,="), "empty item"));
}

TEST(Interfaces, HostnameOverridesTheSpec) {
  SocketAddress address = select_address("127.0.0.1", "=nosuchif0");
  EXPECT_EQ(address.host(), "127.0.0.1");
  EXPECT_EQ(address.port(), 0);
  EXPECT_EQ(select_address("::1", "").family(), AF_INET6);
  EXPECT_THROW(select_address("no-such-host.invalid", ""), InvalidArgument);
}

// Runs `command` with the shell; fails the (child) test when it fails.
void sh(const std::string& command) {
  int rc = std::system(command.c_str());
  ASSERT_EQ(rc, 0) << command;
}

// In a network namespace of its own (so nothing here touches the host's network, and the
// kernel removes every interface when the process exits), build:
//   lo                up, 127.0.0.1
//   eth9   <-veth->  docker0      192.0.2.1/24 + 2001:db8::1 / 198.51.100.1/24
//   ib0    <-veth->  eth10        203.0.113.1/24 / 2001:db8:1::1 only
//   eth11  <-veth->  eth12        down, no address
TEST(Interfaces, SelectionInANetworkNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  if (access("/usr/sbin/ip", X_OK) != 0 && access("/sbin/ip", X_OK) != 0 &&
      access("/usr/bin/ip", X_OK) != 0) {
    GTEST_SKIP() << "needs iproute2 (ip)";
  }
  constexpr int kUnsupported = 77;
  auto results = test::run_processes(
      1,
      [&](int) {
        if (unshare(CLONE_NEWNET) != 0) _exit(kUnsupported);
        if (std::system("ip link add eth9 type veth peer name docker0 2>/dev/null") != 0) {
          _exit(kUnsupported);
        }
        const char* nodad = " nodad";  // usable at once, no duplicate address detection wait
        sh("ip link set lo up");
        sh("ip addr add 192.0.2.1/24 dev eth9 && ip addr add 2001:db8::1/64 dev eth9" +
           std::string(nodad));
        sh("ip addr add 198.51.100.1/24 dev docker0");
        sh("ip link add ib0 type veth peer name eth10");
        sh("ip addr add 203.0.113.1/24 dev ib0");
        sh("ip addr add 2001:db8:1::1/64 dev eth10" + std::string(nodad));
        sh("ip link add eth11 type veth peer name eth12");
        for (const char* name : {"eth9", "docker0", "ib0", "eth10"}) {
          sh(std::string("ip link set ") + name + " up");
        }

        auto pick = [](const std::string& spec) { return select_address("", spec).host(); };
        EXPECT_EQ(pick("=eth9"), "192.0.2.1");  // IPv4 before IPv6 on one interface
        EXPECT_EQ(pick("=eth10"), "2001:db8:1::1");
        EXPECT_EQ(pick("eth1"), "2001:db8:1::1");  // prefix: eth10 (eth11, eth12 are down)
        EXPECT_EQ(pick("^docker,lo,ib,eth1"), "192.0.2.1");
        EXPECT_EQ(pick("^=docker0,lo,=ib0,eth10"), "192.0.2.1");
        EXPECT_EQ(pick("ib,eth9"), "203.0.113.1");  // earlier items first
        EXPECT_EQ(pick("eth9,ib"), "192.0.2.1");
        EXPECT_EQ(pick("eth,^eth9"), "2001:db8:1::1");
        EXPECT_EQ(pick("docker"), "198.51.100.1");
        EXPECT_EQ(pick("lo,eth9"), "127.0.0.1");

        // The default skips loopback and prefers IPv4.
        SocketAddress chosen = select_address("", "");
        EXPECT_EQ(chosen.family(), AF_INET);
        EXPECT_FALSE(chosen.is_loopback());

        // Down interfaces are never chosen, and the message says why.
        std::string error = selection_error("", "=eth11");
        EXPECT_TRUE(contains(error, "down or have no usable address")) << error;
        EXPECT_TRUE(contains(error, "eth11 (down)")) << error;
        EXPECT_TRUE(contains(error, "eth9 (192.0.2.1, 2001:db8::1)")) << error;

        // With every other interface down, the default falls back to loopback...
        for (const char* name : {"eth9", "docker0", "ib0", "eth10"}) {
          sh(std::string("ip link set ") + name + " down");
        }
        EXPECT_EQ(pick(""), "127.0.0.1");
        // ... and with loopback down too, there is nothing to choose.
        sh("ip link set lo down");
        error = selection_error("", "");
        EXPECT_TRUE(contains(error, "no network interface is up")) << error;
      },
      std::chrono::seconds(60));
  ASSERT_EQ(results.size(), 1u);
  if (!results[0].signaled && results[0].exit_code == kUnsupported) {
    GTEST_SKIP() << "network namespaces or veth interfaces are not available here";
  }
  test::expect_all_ok(results);
}

}  // namespace
}  // namespace gloo_lite::tcp
