// Choosing the RDMA device, port and GID index. The GID choice is a pure function of the
// port's GID table so that it is testable without hardware.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gloo_lite::ibverbs {

struct GidEntry {
  int index = 0;
  uint8_t raw[16] = {};
  int type = 0;  // 0 IB, 1 RoCE v1, 2 RoCE v2
};

// "mlx5_0:1" -> {"mlx5_0", 1}; "mlx5_0" -> {"mlx5_0", 0 (first active)}.
struct DeviceSpec {
  std::string name;
  int port = 0;
};
DeviceSpec parse_device_spec(const std::string& spec);

bool gid_is_ipv4_mapped(const uint8_t raw[16]);
bool gid_is_zero(const uint8_t raw[16]);
std::string gid_to_string(const uint8_t raw[16]);

// Prefers RoCE v2 with an IPv4-mapped address (routable, what rdma_cm would use), then RoCE v2
// other than link-local, then RoCE v1 IPv4-mapped, then any non-zero entry. -1 when empty.
int choose_gid(const std::vector<GidEntry>& table);

int mtu_bytes(ibv_mtu mtu);

// The opened device, port and GID the Device runs on.
struct PortChoice {
  ibv_context* context = nullptr;  // owned by the caller (ibv_close_device)
  std::string device;
  int port = 0;
  ibv_port_attr attr{};
  GidEntry gid;
};
PortChoice open_port(const std::string& device_spec, int gid_index);

}  // namespace gloo_lite::ibverbs
