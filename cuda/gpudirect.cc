// The GPUDirect path (cuda/gpudirect.h): device buffers registered as MemoryKind::kCuda and
// moved by the mesh itself. Only the ibverbs transport with nvidia_peermem takes such memory,
// so this file runs only on such hardware; everywhere else gpudirect_possible() is false and
// the Communicator stages (its tests show the path is not taken there).
#include "cuda/gpudirect.h"

#include <memory>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/stream.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite::cuda {
namespace {

using transport::MemoryKind;

std::unique_ptr<transport::Memory> device_memory(Context& context, const void* data, size_t bytes) {
  return engine_of(context).mesh().register_memory(const_cast<void*>(data), bytes,
                                                   MemoryKind::kCuda);
}

// The transport reads and writes device memory behind the streams' backs: the caller's earlier
// work (which the internal streams wait for) must have completed before anything is posted.
void wait_for_earlier_work(Lanes& lanes) {
  lanes.layer->synchronize_stream(lanes.to_host);
  lanes.layer->synchronize_stream(lanes.to_device);
}

}  // namespace

bool gpudirect_possible(Context& context, const DeviceLayer& layer) {
  return knob_bool("GLOO_LITE_CUDA_GPUDIRECT") && !layer.device_memory_is_host() &&
         engine_of(context).mesh().can_register(MemoryKind::kCuda);
}

void gpudirect_send(Lanes& lanes, Context& context, const void* data, size_t bytes, int peer,
                    uint64_t tag) {
  wait_for_earlier_work(lanes);
  auto memory = device_memory(context, data, bytes);
  auto request = engine_of(context).mesh().send(peer, tags::point_to_point(tag), *memory, 0, bytes);
  engine_of(context).mesh().wait({request}, engine_of(context).deadline());
}

void gpudirect_recv(Lanes& lanes, Context& context, void* data, size_t bytes, int peer,
                    uint64_t tag) {
  wait_for_earlier_work(lanes);
  auto memory = device_memory(context, data, bytes);
  auto request = engine_of(context).mesh().recv(peer, tags::point_to_point(tag), *memory, 0, bytes);
  engine_of(context).mesh().wait({request}, engine_of(context).deadline());
}

void gpudirect_broadcast(Lanes& lanes, Context& context, void* data, size_t bytes, int root,
                         uint16_t tag) {
  wait_for_earlier_work(lanes);
  engine_of(context).stream(tag).run_blocking(
      "cuda broadcast", "gpudirect", [&](const detail::Turn& turn) {
        transport::Mesh& mesh = engine_of(context).mesh();
        const uint64_t wire_tag = tags::collective(tag, turn.sequence);
        auto memory = device_memory(context, data, bytes);
        std::vector<transport::RequestPtr> requests;
        if (context.rank() == root) {
          for (int peer = 0; peer < context.size(); ++peer) {
            if (peer != root) requests.push_back(mesh.send(peer, wire_tag, *memory, 0, bytes));
          }
        } else {
          requests.push_back(mesh.recv(root, wire_tag, *memory, 0, bytes));
        }
        mesh.wait(requests, engine_of(context).deadline());
      });
}

void gpudirect_allgather(Lanes& lanes, Context& context, const void* input, void* output,
                         size_t bytes, uint16_t tag) {
  wait_for_earlier_work(lanes);
  const auto rank = static_cast<size_t>(context.rank());
  auto* out = static_cast<std::byte*>(output);
  // The own block, unless already in place, on the device (the host must not touch it).
  if (input != out + rank * bytes && bytes > 0) {
    lanes.layer->copy_on_device(out + rank * bytes, input, bytes, lanes.to_device);
  }
  engine_of(context).stream(tag).run_blocking(
      "cuda allgather", "gpudirect", [&](const detail::Turn& turn) {
        transport::Mesh& mesh = engine_of(context).mesh();
        const uint64_t wire_tag = tags::collective(tag, turn.sequence);
        const size_t total = bytes * static_cast<size_t>(context.size());
        auto in_memory = device_memory(context, input, bytes);
        auto out_memory = device_memory(context, output, total);
        std::vector<transport::RequestPtr> requests;
        for (int peer = 0; peer < context.size(); ++peer) {
          if (peer == context.rank()) continue;
          requests.push_back(mesh.send(peer, wire_tag, *in_memory, 0, bytes));
          requests.push_back(
              mesh.recv(peer, wire_tag, *out_memory, static_cast<size_t>(peer) * bytes, bytes));
        }
        mesh.wait(requests, engine_of(context).deadline());
      });
  lanes.layer->synchronize_stream(lanes.to_device);
}

}  // namespace gloo_lite::cuda
