#include "rendezvous/tcp_store_budget.h"

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite::tcp_store {

namespace {

size_t positive_bytes(const char* knob) {
  uint64_t bytes = parse_bytes(knob_string(knob), knob);
  if (bytes == 0) throw InvalidArgument(std::string(knob) + " must be at least 1 byte");
  return static_cast<size_t>(bytes);
}

}  // namespace

ServerLimits ServerLimits::from_knobs() {
  ServerLimits limits{};
  limits.client_bytes =
      std::min(positive_bytes("GLOO_LITE_STORE_CLIENT_BYTES"), kMaxRequestBodyBytes);
  limits.total_bytes = positive_bytes("GLOO_LITE_STORE_BUFFER_BYTES");
  limits.stall_timeout = knob_ms("GLOO_LITE_STORE_STALL_MS");
  if (limits.stall_timeout.count() <= 0) {
    throw InvalidArgument("GLOO_LITE_STORE_STALL_MS='" + knob_string("GLOO_LITE_STORE_STALL_MS") +
                          "' must be a positive number of milliseconds");
  }
  return limits;
}

bool BodyBudget::admit(ClientId client, size_t bytes) {
  if (bytes <= kAlwaysAdmitted || (queue_.empty() && reserved_ + bytes <= total_) ||
      (queue_.empty() && reserved_ == 0)) {
    held_[client] += bytes;
    reserved_ += bytes;
    return true;
  }
  queued_[client] = queue_.insert(queue_.end(), Waiter{client, bytes});
  return false;
}

std::vector<ClientId> BodyBudget::release(ClientId client) {
  auto held = held_.find(client);
  if (held != held_.end()) {
    reserved_ -= held->second;
    held_.erase(held);
  }
  auto queued = queued_.find(client);
  if (queued != queued_.end()) {
    queue_.erase(queued->second);
    queued_.erase(queued);
  }
  return admit_waiters();
}

// Strictly in order: a large body at the head is not overtaken by smaller ones forever.
std::vector<ClientId> BodyBudget::admit_waiters() {
  std::vector<ClientId> admitted;
  while (!queue_.empty() && (reserved_ + queue_.front().bytes <= total_ || reserved_ == 0)) {
    Waiter next = queue_.front();
    queue_.pop_front();
    queued_.erase(next.client);
    held_[next.client] += next.bytes;
    reserved_ += next.bytes;
    admitted.push_back(next.client);
  }
  return admitted;
}

}  // namespace gloo_lite::tcp_store
