// The transport table (gloo_lite/transport/table.h): the built-in transports in the order they
// are tried for each pair of ranks. The only place that names concrete transports; the core
// library reaches them through builtin_transports().
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/transport/names.h"
#include "gloo_lite/transport/table.h"
#include "transport_shm/shm_device.h"
#include "transport_tcp/tcp_device.h"
#ifdef GLOO_LITE_HAVE_IBVERBS
#include "transport_ibverbs/ib_device.h"
#endif

namespace gloo_lite::transport {
namespace {

#ifdef GLOO_LITE_HAVE_IBVERBS
// Without an RDMA device (or without an active port) the host simply has no ibverbs: skipped.
// A device the user named (GLOO_LITE_IB_DEVICE) that cannot be opened is their error: thrown.
std::shared_ptr<Device> create_ibverbs(std::string* why_not) {
  ibverbs::DeviceOptions options = ibverbs::options_from_env();
  if (!options.device_spec.empty()) return ibverbs::create_device(options);
  try {
    return ibverbs::create_device(options);
  } catch (const InvalidArgument& e) {
    *why_not = e.what();
    return nullptr;
  }
}
#endif

std::shared_ptr<Device> create_shm(std::string* /*why_not*/) { return shm::create_device(); }

std::shared_ptr<Device> create_tcp(std::string* /*why_not*/) {
  tcp::DeviceOptions options;
  options.hostname = knob_string("GLOO_LITE_HOSTNAME");
  options.ifname_spec = knob_string("GLOO_LITE_IFNAME");
  return tcp::create_device(options);
}

}  // namespace

const std::vector<TransportEntry>& builtin_transports() {
  // Shared memory first: it serves only peers on this host (its can_connect), and makes
  // progress only while someone waits on it (no thread of its own).
  static const std::vector<TransportEntry> table = {
      {kShmTransport, create_shm, /*progresses_alone=*/false},
#ifdef GLOO_LITE_HAVE_IBVERBS
      {kIbverbsTransport, create_ibverbs, /*progresses_alone=*/true},
#endif
      {kTcpTransport, create_tcp, /*progresses_alone=*/true},
  };
  return table;
}

}  // namespace gloo_lite::transport
