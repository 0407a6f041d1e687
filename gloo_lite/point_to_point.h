// Internal: non-blocking point-to-point work (ContextEngine::isend/irecv/irecv_any, and the
// blocking forms, which are these plus wait). The transport moves the bytes on its own (TCP's event
// loop, the verbs completion queue), so a point-to-point Work needs no thread: it holds the
// transport request and the registration of the user's buffer, and observing its completion means
// testing or waiting on that request.
//
// The hub is what lets a context be destroyed while such work is in flight: every Work enters
// the hub while it touches the transport, and the context, before its mesh goes, closes the hub
// (no more entries), waits until nobody is inside, and cancels what is left, so that a Work that
// outlives its context finishes with an error instead of touching a freed mesh.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"
#include "gloo_lite/base/fork_generation.h"
#include "gloo_lite/transport/transport.h"
#include "gloo_lite/work_state.h"

namespace gloo_lite::detail {

class PointToPointWork;

// Refuses (InvalidArgument naming `what`, "send" or "recv", this rank, the peer and the count),
// before any memory is touched, a byte count that no buffer at `data` can hold: one past the
// largest object (PTRDIFF_MAX), or one whose range wraps past the end of the address space or
// ends in a page that is not mapped. The last is a mincore() call, made for transfers of 1 MiB
// and more only (under 1% of their copy), so small calls pay nothing; it is what catches a count
// of 2^40 on a 64-byte buffer, which a transport would otherwise copy the peer's memory into.
void check_transfer_buffer(const char* what, int rank, int peer, const void* data, size_t bytes);

class PointToPointHub {
 public:
  PointToPointHub();
  // Enters the hub to use the transport; false once it is closed, and in a forked child of the
  // process that made the hub (gloo_lite/base/fork_generation.h: the transport is the
  // parent's), where forked() is true.
  bool enter();
  bool forked() const { return fork_generation() != fork_generation_; }
  // The error of `call` in a forked child.
  std::exception_ptr forked_error(const std::string& call) const;
  // close()'s error once it closed (null before): a work posted while it closed ends with it.
  std::exception_ptr closed_error();
  void leave();
  void add(const std::shared_ptr<PointToPointWork>& work);
  // Works not finished yet (each is tested first: a transfer that completed but was never
  // looked at is not pending).
  size_t pending();
  // No more entries; waits until nobody is inside; cancels every unfinished work with `why`
  // and drops every work's transport request and registration (the mesh goes next).
  void close(transport::Mesh& mesh, const std::exception_ptr& why);

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  bool open_ = true;
  std::exception_ptr closed_why_;  // close()'s error, for works it refuses afterwards
  int inside_ = 0;
  std::vector<std::weak_ptr<PointToPointWork>> works_;
  size_t prune_at_ = 64;  // drop expired entries when the list reaches this size
  const uint64_t fork_generation_ = fork_generation();
  const int created_in_pid_;  // for forked_error()
};

class PointToPointWork : public WorkState {
 public:
  // What it is, for describe(): a send to `peer`, or a receive from `peer` (from_ranks == 1)
  // or from any of `from_ranks` ranks.
  struct Kind {
    bool send;
    int peer;
    size_t from_ranks;
    uint64_t user_tag;
  };
  PointToPointWork(Kind kind, std::shared_ptr<PointToPointHub> hub, transport::Mesh& mesh,
                   std::unique_ptr<transport::Memory> memory, Deadline deadline)
      : WorkState("p2p"),
        kind_(kind),
        hub_(std::move(hub)),
        mesh_(&mesh),
        memory_(std::move(memory)),
        deadline_(deadline) {}
  // Set once, right after posting.
  void set_request(transport::RequestPtr request) { request_ = std::move(request); }
  transport::Memory& memory() { return *memory_; }

  // Dropping an unfinished point-to-point Work cancels the transfer: its buffer's registration
  // goes with it, so the transport must not touch the buffer (or match the message) any more.
  ~PointToPointWork() override;

  bool test() override;
  bool wait_until(const Deadline& until) override;
  // By the hub's close(): cancel if still running, and let go of the transport.
  void detach(transport::Mesh& mesh, const std::exception_ptr& why);
  std::string describe() const override;

 private:
  void complete();  // the request completed: record its source and finish
  // test()'s answer when the hub refused entry: closed (detach() finished the work), or a
  // forked child, where the work fails without touching the parent's transport.
  bool refused();

  const Kind kind_;
  std::shared_ptr<PointToPointHub> hub_;
  transport::Mesh* mesh_;
  std::unique_ptr<transport::Memory> memory_;
  transport::RequestPtr request_;
  const Deadline deadline_;
};

}  // namespace gloo_lite::detail
