// ContextEngine's failure handling: the first failure ends the context (one warning with the
// flight record, the host segments' waiters and the mesh's peers told, a failure report
// published), and a peer's cause is relayed as that peer's.
#include <chrono>

#include "gloo_lite/base/log.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/failure_report.h"
#include "gloo_lite/shm/host_segment.h"

namespace gloo_lite {

void ContextEngine::fail(const std::string& reason, const std::vector<int>& culprits,
                         bool tell_peers, Deadline report_by) {
  fail_as(transport::ErrorKind::kConnection, reason, culprits, tell_peers, report_by);
}

void ContextEngine::fail_with(transport::ErrorKind kind, const std::string& reason,
                              bool tell_peers) {
  fail_as(kind, reason, {}, tell_peers, Deadline::never());
}

void ContextEngine::fail_as(transport::ErrorKind kind, const std::string& reason,
                            const std::vector<int>& culprits, bool tell_peers, Deadline report_by) {
  // Only a caller reaches here in a forked child (no thread of the parent runs there): an abort
  // from the child would reach the parent's peers.
  require_creating_process("abort");
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_.empty()) return;
    failure_ = reason;
    failed_.store(true, std::memory_order_release);
  }

  // One warning per cause: the transport's own messages about this abort stay below WARN.
  // The newest calls are what explains a failure; flight_record() has them all.
  LOG_WARN("context", reason << "\n" << recorder_.dump("flight recorder of " + describe(), 12));
  {
    // Peers waiting in a shared segment hear nothing from the mesh: fail them there too. Before
    // the mesh: a peer that heard of it through the mesh first would relay it into the segments
    // as its own (their abort record keeps the first writer's cause).
    // A failure that reached this rank through the mesh goes on as its origin's cause.
    transport::AbortCause cause = mesh_->failure_cause();
    if (!cause.known()) cause = {rank_, reason};
    std::lock_guard<std::mutex> lock(segments_mutex_);
    for (auto& [tag, segment] : segments_) {
      if (segment) segment->abort(rank_, kind, cause);
    }
  }
  if (tell_peers) {
    if (kind == transport::ErrorKind::kConnection) {
      mesh_->abort(reason);
    } else {
      mesh_->abort_with(kind, reason);
    }
  }
  // After the peers know: a stopped store must not delay them.
  if (options_.report_failures) {
    publish_failure_report(*store_, rank_, culprits, reason,
                           Deadline::after(std::chrono::milliseconds(250)).earlier(report_by));
  }
}

std::string ContextEngine::failure() const {
  if (!failed_.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

bool ContextEngine::mesh_failed() const { return mesh_->failure_cause().known(); }

void ContextEngine::relay_to_peers(const transport::AbortCause& cause, transport::ErrorKind kind) {
  if (kind == transport::ErrorKind::kConnection) {
    mesh_->abort_relayed(cause);
  } else {
    mesh_->relay_abort(kind, cause);
  }
}

void ContextEngine::abort(const std::string& reason) {
  fail(reason, {}, /*tell_peers=*/false);
  mesh_->abort(reason);  // also when the context had failed before: work in flight must end
}

}  // namespace gloo_lite
