// Point-to-point work and its hub (point_to_point.h).
#include "gloo_lite/point_to_point.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>

#include "gloo_lite/argument_checks.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite::detail {

namespace {

constexpr size_t kMappedCheckBytes = size_t{1} << 20;

// Whether the page holding `address` is mapped in this process (mincore fails with ENOMEM on an
// unmapped page and on an address beyond the user address space; any other failure, EAGAIN
// say, tells nothing, and the buffer is given the benefit of the doubt).
bool page_is_mapped(uintptr_t address) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char resident = 0;
  return mincore(reinterpret_cast<void*>(address & ~(page - 1)), 1, &resident) == 0 ||
         errno != ENOMEM;
}

}  // namespace

void check_transfer_buffer(const char* what, int rank, int peer, const void* data, size_t bytes) {
  const auto start = reinterpret_cast<uintptr_t>(data);
  const char* beyond = nullptr;
  if (bytes > max_buffer_bytes()) {
    beyond = "more than any buffer holds (PTRDIFF_MAX bytes)";
  } else if (bytes > std::numeric_limits<uintptr_t>::max() - start) {
    beyond = "the range wraps past the end of the address space";
  } else if (bytes >= kMappedCheckBytes && !page_is_mapped(start + bytes - 1)) {
    beyond = "the range ends in memory that is not mapped, past the buffer";
  }
  if (beyond == nullptr) return;
  const bool send = what[0] == 's';
  throw InvalidArgument(std::string(what) + " on rank " + std::to_string(rank) +
                        (send ? " to rank " : " from rank ") + std::to_string(peer) + ": " +
                        std::to_string(bytes) + " bytes: " + beyond +
                        "; pass the buffer's size in bytes (nothing was sent or received)");
}

PointToPointHub::PointToPointHub() : created_in_pid_(static_cast<int>(getpid())) {}

std::exception_ptr PointToPointHub::forked_error(const std::string& call) const {
  return std::make_exception_ptr(InvalidArgument(forked_child_message(call, created_in_pid_)));
}

std::exception_ptr PointToPointHub::closed_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_why_;
}

bool PointToPointHub::enter() {
  if (forked()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_) return false;
  ++inside_;
  return true;
}

void PointToPointHub::leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--inside_ == 0) idle_.notify_all();
}

void PointToPointHub::add(const std::shared_ptr<PointToPointWork>& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (works_.size() >= prune_at_) {
    works_.erase(
        std::remove_if(works_.begin(), works_.end(),
                       [](const std::weak_ptr<PointToPointWork>& w) { return w.expired(); }),
        works_.end());
    prune_at_ = std::max<size_t>(64, 2 * works_.size());
  }
  works_.push_back(work);
}

size_t PointToPointHub::pending() {
  std::vector<std::shared_ptr<PointToPointWork>> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& weak : works_) {
      if (auto work = weak.lock()) works.push_back(std::move(work));
    }
  }
  size_t count = 0;
  for (const auto& work : works) count += work->test() ? 0 : 1;  // test() enters the hub
  return count;
}

void PointToPointHub::close(transport::Mesh& mesh, const std::exception_ptr& why) {
  std::vector<std::weak_ptr<PointToPointWork>> works;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    open_ = false;
    closed_why_ = why;
    idle_.wait(lock, [&] { return inside_ == 0; });
    works.swap(works_);
  }
  for (const auto& weak : works) {
    if (auto work = weak.lock()) work->detach(mesh, why);
  }
}

std::string PointToPointWork::describe() const {
  std::string tag = " (tag " + std::to_string(kind_.user_tag) + ")";
  if (kind_.send) return "send to rank " + std::to_string(kind_.peer) + tag;
  if (kind_.from_ranks == 1) return "recv from rank " + std::to_string(kind_.peer) + tag;
  return "recv from any of " + std::to_string(kind_.from_ranks) + " ranks" + tag;
}

void PointToPointWork::complete() {
  set_source(request_->source());
  finish();
}

bool PointToPointWork::test() {
  if (WorkState::test()) return true;
  if (!hub_->enter()) return refused();
  try {
    if (request_->test()) {
      complete();
    } else if (deadline_.expired()) {
      mesh_->wait({request_}, deadline_);  // cancels it and throws the transport's TimeoutError
      complete();
    }
  } catch (...) {
    finish(std::current_exception());
  }
  hub_->leave();
  return WorkState::test();
}

bool PointToPointWork::wait_until(const Deadline& until) {
  if (WorkState::test()) return true;
  if (!hub_->enter()) return refused();
  bool finished = true;
  try {
    // The transport's own wait: it sleeps until the request completes, fails it at its
    // deadline naming the peer, and gives up without cancelling when `until` comes first.
    finished = mesh_->wait_until({request_}, deadline_, until);
    if (finished) complete();
  } catch (...) {
    finish(std::current_exception());
  }
  hub_->leave();
  return finished;
}

bool PointToPointWork::refused() {
  if (hub_->forked()) {
    finish(hub_->forked_error(describe()));
  } else if (auto why = hub_->closed_error(); why && !WorkState::test()) {
    finish(why);  // posted as the context closed: close() never saw it
  }
  return WorkState::test();
}

void PointToPointWork::detach(transport::Mesh& mesh, const std::exception_ptr& why) {
  if (!WorkState::test() && request_) {
    bool done = false;
    try {
      done = request_->test();
    } catch (...) {
      finish(std::current_exception());
    }
    if (done) {
      complete();
    } else {
      mesh.cancel(request_);
      finish(why);
    }
  }
  request_.reset();
  memory_.reset();
}

PointToPointWork::~PointToPointWork() {
  if (!request_ || WorkState::test() || !hub_->enter()) return;
  mesh_->cancel(request_);
  hub_->leave();
}

}  // namespace gloo_lite::detail
