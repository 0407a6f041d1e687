#include "transport_tcp/tcp_device.h"

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/names.h"
#include "transport_tcp/event_loop.h"
#include "transport_tcp/interfaces.h"
#include "transport_tcp/tcp_mesh.h"

namespace gloo_lite::tcp {
namespace {

class TcpDevice : public transport::Device {
 public:
  explicit TcpDevice(const SocketAddress& bind) : bind_(bind) {
    LOG_INFO("tcp", "TCP device on " << bind_.host());
  }
  std::string name() const override {
    return std::string(transport::kTcpTransport) + " " + bind_.host();
  }
  std::unique_ptr<transport::Mesh> create_mesh(int rank, int size,
                                               const transport::MeshOptions& options) override {
    if (size < 1 || rank < 0 || rank >= size) {
      throw InvalidArgument("create_mesh: rank " + std::to_string(rank) + " of " +
                            std::to_string(size) + " is not valid");
    }
    return std::make_unique<TcpMesh>(&loop_, bind_, rank, size, options);
  }

 private:
  SocketAddress bind_;
  EventLoop loop_;
};

}  // namespace

std::shared_ptr<transport::Device> create_device(const DeviceOptions& options) {
  SocketAddress bind = select_address(options.hostname, options.ifname_spec);
  bind.set_port(0);
  return std::make_shared<TcpDevice>(bind);
}

}  // namespace gloo_lite::tcp
