// The public handle: every call goes to the engine (gloo_lite/context_engine.cc), which does
// the work.
#include "gloo_lite/context.h"

#include <utility>

#include "gloo_lite/context_engine.h"

namespace gloo_lite {

std::shared_ptr<Context> Context::create(std::shared_ptr<Store> store, int rank, int size,
                                         std::shared_ptr<transport::Device> device,
                                         ContextOptions options) {
  return std::shared_ptr<Context>(
      new Context(ContextEngine::create(std::move(store), rank, size, std::move(device), options)));
}

Context::Context(std::shared_ptr<ContextEngine> engine)
    : engine_(std::move(engine)), rank_(engine_->rank()), size_(engine_->size()) {}

// The engine goes with its last owner: the handle (nothing else holds it); its destructor
// cancels the work in flight, and a forked child's copy is left alone (ContextEngine::create).
Context::~Context() = default;

std::chrono::milliseconds Context::timeout() const { return engine_->timeout(); }

std::shared_ptr<Context> Context::split(int color, int key) {
  std::shared_ptr<ContextEngine> sub = engine_->split(color, key);
  if (!sub) return nullptr;
  return std::shared_ptr<Context>(new Context(std::move(sub)));
}

bool Context::forked() const { return engine_->forked(); }

void Context::require_creating_process(const char* what) const {
  engine_->require_creating_process(what);
}

uint64_t Context::id() const { return engine_->id(); }

std::string Context::describe() const { return engine_->describe(); }

void Context::send(int peer, const void* data, size_t bytes, uint64_t tag,
                   std::chrono::milliseconds timeout) {
  engine_->send(peer, data, bytes, tag, timeout);
}

void Context::recv(int peer, void* data, size_t bytes, uint64_t tag,
                   std::chrono::milliseconds timeout) {
  engine_->recv(peer, data, bytes, tag, timeout);
}

int Context::recv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                      std::chrono::milliseconds timeout) {
  return engine_->recv_any(peers, data, bytes, tag, timeout);
}

Work Context::isend(int peer, const void* data, size_t bytes, uint64_t tag,
                    std::chrono::milliseconds timeout) {
  return engine_->isend(peer, data, bytes, tag, timeout);
}

Work Context::irecv(int peer, void* data, size_t bytes, uint64_t tag,
                    std::chrono::milliseconds timeout) {
  return engine_->irecv(peer, data, bytes, tag, timeout);
}

Work Context::irecv_any(const std::vector<int>& peers, void* data, size_t bytes, uint64_t tag,
                        std::chrono::milliseconds timeout) {
  return engine_->irecv_any(peers, data, bytes, tag, timeout);
}

void Context::close() { engine_->close(); }

void Context::abort(const std::string& reason) { engine_->abort(reason); }

void Context::fail(const std::string& reason) { engine_->fail(reason); }

std::string Context::failure() const { return engine_->failure(); }

std::string Context::flight_record() const { return engine_->flight_record(); }

}  // namespace gloo_lite
