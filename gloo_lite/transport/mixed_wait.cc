// The mixed mesh's failure relay and wait rule (rules 1-5 of mixed_mesh.h): a wait over
// several sub-meshes, a test that drives the others, and the cause a failure raises.
#include <chrono>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/mixed_mesh.h"

namespace gloo_lite::transport {
namespace {

// How long a wait over several sub-meshes sleeps in one of them before it drives and looks at
// the others (rule 2 of mixed_mesh.h): long while they are idle (only a failure, or a first
// record from a peer, can wait that long), short while a waiter-driven one has work in hand.
constexpr std::chrono::milliseconds kFailureSlice{20};
constexpr std::chrono::milliseconds kProgressSlice{1};

}  // namespace

bool MixedMesh::MixedRequest::test() {
  try {
    if (inner_->test()) return true;
    // A poller drives the other waiter-driven sub-meshes as a waiter does (rule 2): a thread
    // that only tests a TCP request must not leave a shared-memory peer stuck.
    mesh_->drive_waiter_driven(sub_);
    mesh_->relay_failures();  // a poller must learn of another sub-mesh's failure too
    return inner_->test();
  } catch (...) {
    mesh_->rethrow_cause();  // this sub-mesh's failure reaches the others' peers (rule 5)
  }
}

AbortCause MixedMesh::failure_cause() {
  if (single_) return single_->failure_cause();
  relay_failures();  // the healthy sub-meshes carry the failed one's cause from here on
  // The cause rules 3 and 5 chose (what a wait raised), else the first known.
  const int cause = cause_sub();
  if (cause >= 0) {
    AbortCause chosen = subs_[cause]->mesh->failure_cause();
    if (chosen.known()) return chosen;
  }
  for (auto& sub : subs_) {
    AbortCause cause = sub->mesh->failure_cause();
    if (cause.known()) return cause;
  }
  return {};
}

bool MixedMesh::found_here(const Sub& sub) const {
  if (!sub.engine) return false;
  return sub.engine->failure().kind == ErrorKind::kConnection &&
         sub.engine->abort_cause().origin == rank_;
}

int MixedMesh::cause_sub() {
  int first = -1;
  bool healthy_waiter_driven = false;
  for (size_t i = 0; i < subs_.size(); ++i) {
    const Sub& sub = *subs_[i];
    if (!sub.engine) continue;
    if (!sub.engine->failure().failed()) {
      healthy_waiter_driven = healthy_waiter_driven || !sub.transport.progresses_alone;
    } else if (first < 0) {
      first = static_cast<int>(i);
    }
  }
  if (first < 0 || !found_here(*subs_[first])) return first;
  // Rule 5: a look at what the waiter-driven sub-meshes hold before a lost connection is taken
  // as the cause. Their own failures are read just below, whatever this round raised.
  if (healthy_waiter_driven) {
    for (size_t i = 0; i < subs_.size(); ++i) {
      Sub& sub = *subs_[i];
      if (sub.transport.progresses_alone) continue;
      try {  // each on its own: one that throws must not keep the others from their round
        sub.mesh->wait_until({}, Deadline::never(), Deadline::after(std::chrono::milliseconds(0)));
      } catch (...) {
      }
    }
  }
  for (size_t i = 0; i < subs_.size(); ++i) {
    const Sub& sub = *subs_[i];
    if (sub.engine && sub.engine->failure().failed() && !found_here(sub)) {
      return static_cast<int>(i);
    }
  }
  return first;
}

void MixedMesh::relay_failures() {
  if (single_) return;
  const int cause = cause_sub();
  if (cause < 0) return;
  Sub& failed = *subs_[cause];
  Failure failure = failed.engine->failure();
  for (auto& other : subs_) {
    if (other.get() == &failed) continue;
    if (other->engine) {
      if (other->engine->failure().failed()) continue;
      LOG_DEBUG("context", "rank " << rank_ << ": the " << failed.transport.name
                                   << " pairs failed; failing the " << other->transport.name
                                   << " pairs with them");
      // The cause as it came (its origin, its text), not this rank's message about it.
      other->engine->relay_abort(failure.kind, failed.engine->abort_cause());
    } else {
      other->mesh->abort(failure.message);
    }
  }
}

void MixedMesh::rethrow_cause() {
  relay_failures();
  try {
    throw;
  } catch (const ConnectionError&) {
    // Rule 5: a connection this rank lost, with a peer's abort found behind it, raises that.
    const int cause = cause_sub();
    bool lost_here = false;
    for (const auto& sub : subs_) lost_here = lost_here || found_here(*sub);
    if (cause >= 0 && lost_here && !found_here(*subs_[cause])) {
      Failure failure = subs_[cause]->engine->failure();
      throw_error(failure.kind, failure.message);
    }
    throw;
  }
}

bool MixedMesh::drive_waiter_driven(int except) {
  bool busy = false;
  for (size_t i = 0; i < subs_.size(); ++i) {
    Sub& sub = *subs_[i];
    if (sub.transport.progresses_alone || static_cast<int>(i) == except) continue;
    // An empty wait whose `until` has passed: one round of progress (inboxes read, queued
    // output pushed, liveness checked when due) and no sleep, whatever this rank has posted.
    sub.mesh->wait_until({}, Deadline::never(), Deadline::after(std::chrono::milliseconds(0)));
    // A transport off the shared engine cannot say: taken as busy (short slices).
    busy = busy || sub.engine == nullptr || sub.engine->has_work_for_waiter();
  }
  return busy;
}

// One wait's requests grouped by sub-mesh, and which groups are done.
struct MixedMesh::Groups {
  std::vector<std::vector<RequestPtr>> of;  // by sub-mesh
  // The sub-meshes with requests, in the order they are looked at (rule 1).
  std::vector<size_t> order;
  std::vector<bool> done;  // by sub-mesh
};

MixedMesh::Groups MixedMesh::group(const std::vector<RequestPtr>& requests) const {
  const size_t n = subs_.size();
  Groups groups;
  groups.of.resize(n);
  groups.done.assign(n, false);
  for (const auto& request : requests) {
    auto& mixed = static_cast<MixedRequest&>(*request);
    groups.of[mixed.sub_].push_back(mixed.inner_);
  }
  // Rule 1: groups of waiter-driven transports first, in table order.
  for (bool alone : {false, true}) {
    for (size_t i = 0; i < n; ++i) {
      if (groups.of[i].empty() || subs_[i]->transport.progresses_alone != alone) continue;
      groups.order.push_back(i);
    }
  }
  return groups;
}

void MixedMesh::fail_wait(const Groups& groups) {
  // Rule 4: nothing stays in flight when one group throws.
  for (size_t index : groups.order) {
    for (const auto& request : groups.of[index]) subs_[index]->mesh->cancel(request);
  }
  // A failure of this sub-mesh (a collective mismatch it found, a lost peer) must reach the
  // peers of the others now: the caller fails without telling peers what a transport already
  // told its own.
  rethrow_cause();
}

bool MixedMesh::look(Groups& groups, size_t index, const Deadline& slice) {
  // Never times out: the deadline is wait_until's, so that a timeout names the late peers of
  // every group at once.
  try {
    if (subs_[index]->mesh->wait_until(groups.of[index], Deadline::never(), slice)) {
      groups.done[index] = true;
    }
  } catch (...) {
    fail_wait(groups);
  }
  return groups.done[index];
}

bool MixedMesh::time_out(const Groups& groups, const Deadline& deadline) {
  // Each late group's own TimeoutError names its peers and cancels its requests.
  std::string late;
  for (size_t index : groups.order) {
    if (groups.done[index]) continue;
    try {
      subs_[index]->mesh->wait_until(groups.of[index], deadline, deadline);
    } catch (const TimeoutError& e) {
      late += (late.empty() ? "" : " | ") + subs_[index]->transport.name + ": " + e.what();
    } catch (...) {
      fail_wait(groups);
    }
  }
  if (late.empty()) return true;  // they completed meanwhile
  throw TimeoutError(late);
}

void MixedMesh::hand_back(const Groups& groups, const std::vector<size_t>& others) {
  // A test of each group's first pending request hands what its waits left behind back to its
  // own progress engine at once (TCP's parked sockets would otherwise wait up to 2 ms for its
  // event loop to take them back).
  try {
    for (size_t index : others) {
      for (const auto& request : groups.of[index]) {
        if (!request->test()) break;
      }
    }
  } catch (...) {
    fail_wait(groups);
  }
}

bool MixedMesh::wait_until(const std::vector<RequestPtr>& requests, const Deadline& deadline,
                           const Deadline& until) {
  if (single_) return single_->wait_until(requests, deadline, until);
  Groups groups = group(requests);
  const Deadline bound = until.earlier(deadline);
  while (true) {
    relay_failures();  // rule 3
    if (deadline.expired()) return time_out(groups, deadline);
    std::vector<size_t> pending;
    for (size_t index : groups.order) {
      if (!groups.done[index] &&
          !look(groups, index, Deadline::after(std::chrono::milliseconds(0)))) {
        pending.push_back(index);
      }
    }
    if (pending.empty()) return true;
    if (bound.expired() && !deadline.expired()) return false;  // `until` came first
    // The groups this thread will not sleep in go back to their own engines.
    hand_back(groups, std::vector<size_t>(pending.begin() + 1, pending.end()));
    // Rule 2: every waiter-driven sub-mesh but the one this thread sleeps in moves now, and
    // after every slice, whether or not this wait holds requests of it.
    bool busy = false;
    try {
      busy = drive_waiter_driven(static_cast<int>(pending.front()));
    } catch (...) {
      fail_wait(groups);
    }
    auto slice = Deadline::after(busy ? kProgressSlice : kFailureSlice);
    look(groups, pending.front(), bound.earlier(slice));
  }
}

}  // namespace gloo_lite::transport
