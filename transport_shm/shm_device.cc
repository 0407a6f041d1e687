#include "transport_shm/shm_device.h"

#include "gloo_lite/base/error.h"
#include "gloo_lite/transport/names.h"
#include "transport_shm/address.h"
#include "transport_shm/shm_mesh.h"

namespace gloo_lite::shm {
namespace {

class ShmDevice : public transport::Device {
 public:
  std::string name() const override { return transport::kShmTransport; }
  std::unique_ptr<transport::Mesh> create_mesh(int rank, int size,
                                               const transport::MeshOptions& options) override {
    if (size < 1 || rank < 0 || rank >= size) {
      throw InvalidArgument("create_mesh: rank " + std::to_string(rank) + " of " +
                            std::to_string(size) + " is not valid");
    }
    return std::make_unique<ShmMesh>(rank, size, settings_from_knobs(options));
  }
  bool can_connect(const std::string& my_address, const std::string& peer_address) const override {
    auto mine = Address::parse(my_address);
    auto theirs = Address::parse(peer_address);
    return mine && theirs && mine->shares_memory_with(*theirs);
  }
};

}  // namespace

std::shared_ptr<transport::Device> create_device(const DeviceOptions& /*options*/) {
  return std::make_shared<ShmDevice>();
}

}  // namespace gloo_lite::shm
