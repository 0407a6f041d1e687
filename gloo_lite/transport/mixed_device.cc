// The mixed device and the address list of its meshes (mixed_device.h).
#include "gloo_lite/transport/mixed_device.h"

#include <utility>

#include "gloo_lite/base/error.h"
#include "gloo_lite/transport/mixed_mesh.h"

namespace gloo_lite::transport {
namespace {

class MixedDevice : public Device {
 public:
  MixedDevice(std::vector<SubDevice> transports, bool forced)
      : transports_(std::move(transports)), forced_(forced) {}

  // "shm+tcp": the transports its meshes may use, in priority order.
  std::string name() const override {
    std::string text;
    for (const auto& transport : transports_) text += (text.empty() ? "" : "+") + transport.name;
    return text;
  }
  std::unique_ptr<Mesh> create_mesh(int rank, int size, const MeshOptions& options) override {
    return std::make_unique<MixedMesh>(rank, size, transports_, forced_, options);
  }

 private:
  std::vector<SubDevice> transports_;
  bool forced_;
};

}  // namespace

std::shared_ptr<Device> create_mixed_device(std::vector<SubDevice> transports, bool forced) {
  if (transports.empty()) {
    throw InvalidArgument("create_mixed_device: no transport is available on this host");
  }
  for (const auto& transport : transports) {
    if (transport.name.empty() || transport.name.find_first_of(";= ") != std::string::npos ||
        !transport.device) {
      throw InvalidArgument("create_mixed_device: transport '" + transport.name +
                            "' needs a device and a name without ';', '=' or spaces");
    }
  }
  return std::make_shared<MixedDevice>(std::move(transports), forced);
}

std::string encode_addresses(const std::vector<LabelledAddress>& parts) {
  std::string text;
  for (const auto& part : parts) {
    if (part.address.empty() || part.address.find_first_of("; \t\n") != std::string::npos) {
      throw Error("internal: the " + part.name + " address '" + part.address +
                  "' is empty or holds ';' or a space, which a transport list cannot carry");
    }
    text += (text.empty() ? "" : ";") + part.name + "=" + part.address;
  }
  return text;
}

std::vector<LabelledAddress> decode_addresses(const std::string& text, int rank) {
  std::vector<LabelledAddress> parts;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(';', begin);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(begin, end - begin);
    size_t equals = item.find('=');
    if (equals == 0 || equals == std::string::npos || equals + 1 == item.size()) {
      throw InvalidArgument("rank " + std::to_string(rank) + " published the address '" + text +
                            "', which is not a list of transport=address items: is every rank "
                            "running the same gloo_lite?");
    }
    parts.push_back({item.substr(0, equals), item.substr(equals + 1)});
    begin = end + 1;
  }
  return parts;
}

}  // namespace gloo_lite::transport
