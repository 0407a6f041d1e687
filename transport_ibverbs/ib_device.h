// The ibverbs transport: creates a Device on one RDMA port (RC queue pairs, eager credits,
// rendezvous by RDMA WRITE WITH IMMEDIATE). See docs/transport-ibverbs.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::ibverbs {

struct DeviceOptions {
  std::string device_spec;  // GLOO_LITE_IB_DEVICE: "name[:port]"; empty: first active port
  int gid_index = -1;       // GLOO_LITE_IB_GID_INDEX; -1: chosen automatically
  // The side TCP channel (handshake, liveness, abort): as for the TCP transport.
  std::string hostname;     // GLOO_LITE_HOSTNAME
  std::string ifname_spec;  // GLOO_LITE_IFNAME
};

// Options from the GLOO_LITE_IB_* / GLOO_LITE_HOSTNAME / GLOO_LITE_IFNAME knobs.
DeviceOptions options_from_env();

// Throws InvalidArgument, saying so, when there is no usable RDMA device or port.
std::shared_ptr<transport::Device> create_device(const DeviceOptions& options);

// What the device chose, for tests and logs.
struct DeviceInfo {
  std::string device;
  int port = 0;
  int gid_index = 0;
  std::string gid;     // textual IPv6 form
  int gid_type = 0;    // 0 IB, 1 RoCE v1, 2 RoCE v2
  int active_mtu = 0;  // bytes
  bool ethernet = false;
};
DeviceInfo device_info(const transport::Device& device);

struct MrCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t invalidations = 0;
  uint64_t pinned_bytes = 0;
  uint64_t entries = 0;
};
MrCacheStats mr_cache_stats(const transport::Device& device);

}  // namespace gloo_lite::ibverbs
