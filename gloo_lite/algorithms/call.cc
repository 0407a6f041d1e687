#include "gloo_lite/algorithms/call.h"

#include "gloo_lite/transport/tag_space.h"

#include <algorithm>
#include <numeric>

namespace gloo_lite::algo {

Call Call::on(ContextEngine& context, Collective collective, DataType type, ReduceOp op, int root) {
  Call call;
  call.context = &context;
  call.mesh = &context.mesh();
  call.rank = context.rank();
  call.size = context.size();
  call.ranks_per_core = context.ranks_per_core();
  call.collective = collective;
  call.type = type;
  call.element = element_size(type);
  call.op = op;
  call.root = root;
  return call;
}

size_t Call::total_bytes() const {
  size_t elements = count;
  elements = std::max(elements, std::accumulate(blocks.begin(), blocks.end(), size_t{0}));
  elements = std::max(elements, std::accumulate(recv_blocks.begin(), recv_blocks.end(), size_t{0}));
  return bytes(elements);
}

Scratch::Scratch(const Call& call, size_t bytes) {
  uint16_t tag = tags::stream_of(call.tag);
  ContextEngine::ScratchSpace space = call.context->scratch(tag, bytes);
  data_ = space.data;
  memory_ = space.memory;
}

Step::~Step() {
  const bool failing = std::uncaught_exceptions() > unwinding_before_;
  for (const auto& request : requests_) {
    if (failing) {
      call_.mesh->cancel_failing(request);
    } else {
      call_.mesh->cancel(request);
    }
  }
}

transport::RequestPtr Step::send(int peer, const transport::Memory& memory, size_t offset,
                                 size_t bytes) {
  requests_.push_back(call_.mesh->send(peer, call_.tag, memory, offset, bytes, call_.fingerprint));
  return requests_.back();
}

transport::RequestPtr Step::recv(int peer, transport::Memory& memory, size_t offset, size_t bytes) {
  requests_.push_back(call_.mesh->recv(peer, call_.tag, memory, offset, bytes, call_.fingerprint));
  return requests_.back();
}

void Step::wait() {
  if (requests_.empty()) return;
  call_.mesh->wait(requests_, call_.deadline);
  requests_.clear();
}

void Step::wait(const transport::RequestPtr& request) {
  call_.mesh->wait({request}, call_.deadline);
}

}  // namespace gloo_lite::algo
