// The shared-memory transport, for ranks on one host: per-pair rings in a memfd segment for
// small messages, one process_vm_readv (or a pipelined copy through the ring) for large ones.
// No progress thread: waiters drive their meshes. See docs/transport-shm.md.
#pragma once

#include <memory>

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::shm {

struct DeviceOptions {};

// One device may serve many contexts; their meshes are independent. can_connect() is true for
// two addresses on the same machine (boot id), /dev/shm device and user namespace.
std::shared_ptr<transport::Device> create_device(const DeviceOptions& options = {});

}  // namespace gloo_lite::shm
