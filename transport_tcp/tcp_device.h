// The TCP transport: creates a Device whose epoll progress engine serves every context on it.
#pragma once

#include <memory>
#include <string>

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::tcp {

struct DeviceOptions {
  std::string hostname;     // GLOO_LITE_HOSTNAME: explicit address or host name to bind
  std::string ifname_spec;  // GLOO_LITE_IFNAME
};

std::shared_ptr<transport::Device> create_device(const DeviceOptions& options = {});

}  // namespace gloo_lite::tcp
