// ContextEngine's point-to-point entry points (Context forwards to them): the blocking forms wait
// on the transport's request, the non-blocking ones hand it to the point-to-point hub as a Work.
#include <string>

#include "gloo_lite/base/error.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/point_to_point.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite {

static Deadline deadline_for(std::chrono::milliseconds timeout,
                             std::chrono::milliseconds fallback) {
  return Deadline::after(timeout.count() > 0 ? timeout : fallback);
}

// The checks every point-to-point entry point makes before it touches the transport (this is
// the context's process, the context is open, the tag is in the user's half of the tag space,
// gloo_lite/transport/tag_space.h, the buffer is usable); returns the tag on the wire.
static uint64_t point_to_point_tag(const char* what, const ContextEngine& context, int peer,
                                   uint64_t tag, const void* data, size_t bytes) {
  context.require_creating_process(what);
  context.require_open(what);
  if (tag > tags::kMaxUserTag) {
    throw InvalidArgument(std::string(what) + " on rank " + std::to_string(context.rank()) +
                          " with rank " + std::to_string(peer) + ": tag " + std::to_string(tag) +
                          " is out of range; point-to-point tags are 0 <= tag < 2^63");
  }
  detail::check_transfer_buffer(what, context.rank(), peer, data, bytes);
  return tags::point_to_point(tag);
}

Work ContextEngine::isend(int peer, const void* data, size_t bytes, uint64_t tag,
                          std::chrono::milliseconds timeout) {
  uint64_t wire_tag = point_to_point_tag("send", *this, peer, tag, data, bytes);
  auto work = std::make_shared<detail::PointToPointWork>(
      detail::PointToPointWork::Kind{true, peer, 1, tag}, point_to_point_, *mesh_,
      mesh_->register_memory(const_cast<void*>(data), bytes),
      deadline_for(timeout, options_.timeout));
  work->set_request(mesh_->send(peer, wire_tag, work->memory(), 0, bytes));
  point_to_point_->add(work);
  return Work(work);
}

Work ContextEngine::irecv(int peer, void* data, size_t bytes, uint64_t tag,
                          std::chrono::milliseconds timeout) {
  return irecv_any({peer}, data, bytes, tag, timeout);
}

Work ContextEngine::irecv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                              std::chrono::milliseconds timeout) {
  int first = peers.empty() ? -1 : peers[0];
  uint64_t wire_tag = point_to_point_tag("recv", *this, first, tag, data, bytes);
  auto work = std::make_shared<detail::PointToPointWork>(
      detail::PointToPointWork::Kind{false, first, peers.size(), tag}, point_to_point_, *mesh_,
      mesh_->register_memory(data, bytes), deadline_for(timeout, options_.timeout));
  work->set_request(mesh_->recv(peers, wire_tag, work->memory(), 0, bytes));
  point_to_point_->add(work);
  return Work(work);
}

// The blocking forms post like the non-blocking ones but wait on the request directly: no Work
// to allocate and track, since nothing outlives the call.
void ContextEngine::send(int peer, const void* data, size_t bytes, uint64_t tag,
                         std::chrono::milliseconds timeout) {
  uint64_t wire_tag = point_to_point_tag("send", *this, peer, tag, data, bytes);
  auto memory = mesh_->register_memory(const_cast<void*>(data), bytes);
  auto request = mesh_->send(peer, wire_tag, *memory, 0, bytes);
  mesh_->wait({request}, deadline_for(timeout, options_.timeout));
}

void ContextEngine::recv(int peer, void* data, size_t bytes, uint64_t tag,
                         std::chrono::milliseconds timeout) {
  recv_any({peer}, data, bytes, tag, timeout);
}

int ContextEngine::recv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                            std::chrono::milliseconds timeout) {
  uint64_t wire_tag =
      point_to_point_tag("recv", *this, peers.empty() ? -1 : peers[0], tag, data, bytes);
  auto memory = mesh_->register_memory(data, bytes);
  auto request = mesh_->recv(peers, wire_tag, *memory, 0, bytes);
  mesh_->wait({request}, deadline_for(timeout, options_.timeout));
  return request->source();
}

}  // namespace gloo_lite
