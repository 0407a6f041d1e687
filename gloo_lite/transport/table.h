// The transport table: the transports this program was linked with, in priority order (shared
// memory, then ibverbs, then TCP), each able to create its device from the environment. The
// core library reaches concrete transports only through it: builtin_transports() is declared
// here and defined by the table's own target (transports/, linked into gloo_lite::gloo_lite),
// so that nothing in gloo_lite/*.cc includes a transport's headers (docs/layering.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::transport {

struct TransportEntry {
  // What GLOO_LITE_TRANSPORT names it by, and the label of its address in a mixed address.
  const char* name;
  // Creates the device from the environment (GLOO_LITE_IFNAME, GLOO_LITE_IB_DEVICE, ...).
  // Returns nullptr with *why_not set when the transport cannot run on this host (no RDMA
  // device, say); a misconfiguration the user asked for throws instead.
  std::shared_ptr<Device> (*create)(std::string* why_not);
  // Whether its meshes make progress with no thread waiting on them (an event loop or a
  // progress thread: TCP, ibverbs). False: only while a thread waits on or tests one of its
  // requests (shared memory). The mixed mesh's wait rule depends on it (mixed_mesh.h).
  bool progresses_alone;
};

// The built-in transports, highest priority first. Defined in transports/builtin_transports.cc.
const std::vector<TransportEntry>& builtin_transports();

}  // namespace gloo_lite::transport
