// The device: one port, one protection domain, one completion channel for every mesh's CQ, the
// registration cache, and a progress thread that sleeps on the channel (no busy polling).
#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/names.h"
#include "transport_ibverbs/ib_mesh.h"
#include "transport_tcp/tcp_device.h"

namespace gloo_lite::ibverbs {
namespace {

// How often the progress thread looks at the side channel for dead peers.
constexpr int kLifelinePollMs = 50;

}  // namespace

DeviceOptions options_from_env() {
  DeviceOptions options;
  options.device_spec = knob_string("GLOO_LITE_IB_DEVICE");
  options.gid_index = static_cast<int>(knob_int("GLOO_LITE_IB_GID_INDEX"));
  options.hostname = knob_string("GLOO_LITE_HOSTNAME");
  options.ifname_spec = knob_string("GLOO_LITE_IFNAME");
  return options;
}

IbDevice::IbDevice(PortChoice port, const DeviceOptions& options) : port_(std::move(port)) {
  tuning_.depth = static_cast<int>(knob_int("GLOO_LITE_IB_RECV_DEPTH"));
  tuning_.slot_bytes = static_cast<size_t>(knob_int("GLOO_LITE_IB_BUFFER_BYTES"));
  tuning_.timeout = static_cast<int>(knob_int("GLOO_LITE_IB_TIMEOUT"));
  tuning_.retry_count = static_cast<int>(knob_int("GLOO_LITE_IB_RETRY_COUNT"));
  // GLOO_LITE_IB_BUSY_POLL=1 is GLOO_LITE_IB_SPIN_US without a bound.
  tuning_.spin = knob_bool("GLOO_LITE_IB_BUSY_POLL")
                     ? WaitPolicy::kWholeWait
                     : std::chrono::microseconds(knob_int("GLOO_LITE_IB_SPIN_US"));
  if (tuning_.depth < 4) throw InvalidArgument("GLOO_LITE_IB_RECV_DEPTH must be at least 4");
  if (tuning_.slot_bytes < 256)
    throw InvalidArgument("GLOO_LITE_IB_BUFFER_BYTES must be at least 256");
  pd_ = ibv_alloc_pd(port_.context);
  if (pd_ == nullptr) {
    ibv_close_device(port_.context);
    throw Error("ibverbs: ibv_alloc_pd failed on " + port_.device);
  }
  channel_ = ibv_create_comp_channel(port_.context);
  if (channel_ == nullptr) {
    ibv_dealloc_pd(pd_);
    ibv_close_device(port_.context);
    throw Error("ibverbs: ibv_create_comp_channel failed on " + port_.device);
  }
  int flags = fcntl(channel_->fd, F_GETFL);
  fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK);
  cache_ =
      std::make_unique<MrCache>(pd_, static_cast<uint64_t>(knob_int("GLOO_LITE_IB_PINNED_BYTES")));
  tcp::DeviceOptions tcp_options;
  tcp_options.hostname = options.hostname;
  tcp_options.ifname_spec = options.ifname_spec;
  control_ = tcp::create_device(tcp_options);
  LOG_INFO("ibverbs", "ibverbs device " << name() << ", GID index " << port_.gid.index << " ("
                                        << gid_to_string(port_.gid.raw) << ", type "
                                        << port_.gid.type << "), active MTU "
                                        << mtu_bytes(port_.attr.active_mtu));
  thread_ = std::thread([this] { progress(); });
}

IbDevice::~IbDevice() {
  stop_ = true;
  thread_.join();
  cache_.reset();
  ibv_destroy_comp_channel(channel_);
  ibv_dealloc_pd(pd_);
  ibv_close_device(port_.context);
}

std::string IbDevice::name() const {
  return std::string(transport::kIbverbsTransport) + " " + port_.device + ":" +
         std::to_string(port_.port);
}

LocalPort IbDevice::local_port(uint32_t psn) const {
  LocalPort local;
  local.port = port_.port;
  local.gid_index = port_.gid.index;
  local.ethernet = port_.attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  local.mtu = port_.attr.active_mtu;
  local.psn = psn;
  local.timeout = tuning_.timeout;
  local.retry_count = tuning_.retry_count;
  return local;
}

std::unique_ptr<transport::Mesh> IbDevice::create_mesh(int rank, int size,
                                                       const transport::MeshOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw InvalidArgument("create_mesh: rank " + std::to_string(rank) + " of " +
                          std::to_string(size) + " is not valid");
  }
  return std::make_unique<IbMesh>(shared_from_this(), rank, size, options);
}

void IbDevice::add_mesh(IbMesh* mesh) {
  std::lock_guard<std::mutex> lock(meshes_mutex_);
  meshes_.insert(mesh);
}

void IbDevice::remove_mesh(IbMesh* mesh) {
  std::lock_guard<std::mutex> lock(meshes_mutex_);
  meshes_.erase(mesh);
}

// Serves completions that arrive while no caller waits, and watches the side channel. Sleeps in
// poll() on the completion channel; the timeout only paces the liveness checks.
void IbDevice::progress() {
  auto last_check = std::chrono::steady_clock::now();
  while (!stop_) {
    pollfd fd{channel_->fd, POLLIN, 0};
    int ready = ::poll(&fd, 1, kLifelinePollMs);
    if (ready > 0) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      while (ibv_get_cq_event(channel_, &cq, &context) == 0) {
        // Acknowledged at once: a CQ cannot be destroyed before its events are acknowledged,
        // and a mesh that is being destroyed has left the set below first.
        ibv_ack_cq_events(cq, 1);
        std::lock_guard<std::mutex> lock(meshes_mutex_);
        auto* mesh = static_cast<IbMesh*>(context);
        if (meshes_.count(mesh)) mesh->on_cq_event();
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_check >= std::chrono::milliseconds(kLifelinePollMs)) {
      last_check = now;
      std::lock_guard<std::mutex> lock(meshes_mutex_);
      for (IbMesh* mesh : meshes_) mesh->check_lifelines();
    }
  }
}

std::shared_ptr<transport::Device> create_device(const DeviceOptions& options) {
  PortChoice port = open_port(options.device_spec, options.gid_index);
  return std::make_shared<IbDevice>(std::move(port), options);
}

DeviceInfo device_info(const transport::Device& device) {
  const auto* ib = dynamic_cast<const IbDevice*>(&device);
  if (ib == nullptr) throw InvalidArgument("device_info: not an ibverbs device");
  DeviceInfo info;
  info.device = ib->port().device;
  info.port = ib->port().port;
  info.gid_index = ib->port().gid.index;
  info.gid = gid_to_string(ib->port().gid.raw);
  info.gid_type = ib->port().gid.type;
  info.active_mtu = mtu_bytes(ib->port().attr.active_mtu);
  info.ethernet = ib->port().attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  return info;
}

MrCacheStats mr_cache_stats(const transport::Device& device) {
  auto* ib = dynamic_cast<const IbDevice*>(&device);
  if (ib == nullptr) throw InvalidArgument("mr_cache_stats: not an ibverbs device");
  return const_cast<IbDevice*>(ib)->cache().stats();
}

}  // namespace gloo_lite::ibverbs
