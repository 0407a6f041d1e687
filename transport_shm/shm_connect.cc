// Connecting and closing a shared-memory mesh. Each rank reserves the inboxes of the peers it
// serves in its own segment, publishes it (ready), then maps every served peer's segment
// through /proc/<pid>/fd/<fd> and verifies its header (magic, version, nonce, context id, rank,
// size), probes whether process_vm_readv may read the peer, and says hello in its inbox there.
// Connect completes once every served peer has said hello in ours.
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/host.h"
#include "gloo_lite/base/log.h"
#include "transport_shm/shm_auth.h"
#include "transport_shm/shm_mesh.h"

namespace gloo_lite::shm {
namespace {

constexpr auto kConnectSlice = std::chrono::milliseconds(2);
// Between looks at a mapped peer's ready flag, and between pushes of queued records at close.
constexpr auto kReadyPoll = std::chrono::microseconds(200);
constexpr auto kFlushPoll = std::chrono::microseconds(100);

// Whether this process may read `pid`'s memory: one 8-byte process_vm_readv of a known word.
bool probe_cma(int pid, const SegmentHeader& header, std::string* why) {
  uint64_t value = 0;
  iovec local{&value, sizeof(value)};
  iovec remote{reinterpret_cast<void*>(header.probe_address), sizeof(value)};
  ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(sizeof(value)) && value == header.probe_value) return true;
  *why = n < 0 ? std::strerror(errno) : "the probe word read back wrong";
  return false;
}

}  // namespace

void ShmMesh::connect(const std::vector<std::string>& addresses, uint64_t context_id,
                      const Deadline& deadline) {
  if (static_cast<int>(addresses.size()) != size_) {
    throw InvalidArgument("connect: " + std::to_string(addresses.size()) +
                          " addresses for a context of " + std::to_string(size_) + " ranks");
  }
  // Sends and receives naming a peer another transport serves fail at post time (as on TCP).
  set_served(addresses);
  const int served = make_pairs(addresses);
  // Ranks per CPU on this host decide the waiting policy: everyone this mesh serves is local.
  // GLOO_LITE_SHM_SPIN_US bounds the polling with a core per rank.
  wait_policy_.configure_for(
      static_cast<double>(served + 1) / std::max(1, count_cpus(usable_cpu_mask())),
      {std::chrono::microseconds(settings_.spin_us), kDefaultWaitBounds.shared_core});
  std::vector<std::string> refused = reserve_inboxes();
  publish_segment(context_id);
  try {
    for (auto& pair : pairs_) {
      if (!pair || !pair->served) continue;
      if (!refused[pair->peer].empty()) {
        give_back(*pair, refused[pair->peer], /*here=*/true);
        continue;
      }
      SegmentHeader* header = map_peer(*pair, deadline);
      Layout theirs;
      if (!check_peer_header(*pair, *header, context_id, &theirs)) continue;
      say_hello(*pair, *header, theirs, context_id);
    }
    await_hellos(context_id, deadline);
  } catch (const std::exception& e) {
    // Peers that already mapped this rank would otherwise wait on it until their deadline.
    for (auto& pair : pairs_) {
      if (pair && pair->served) {
        write_close(*pair, CloseState::kAbort, ErrorKind::kConnection,
                    "rank " + std::to_string(rank_) + " failed to connect: " + e.what());
      }
    }
    throw;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& pair : pairs_) {
    if (pair && pair->served) pair->open = true;
  }
}

std::string ShmMesh::me() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

std::string ShmMesh::who(const Pair& pair) {
  return "rank " + std::to_string(pair.peer) + " (pid " + std::to_string(pair.address.pid) +
         ", fd " + std::to_string(pair.address.fd) + ")";
}

int ShmMesh::make_pairs(const std::vector<std::string>& addresses) {
  int served = 0;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    auto pair = std::make_unique<Pair>();
    pair->peer = peer;
    if (!addresses[peer].empty()) {
      auto parsed = Address::parse(addresses[peer]);
      if (!parsed) {
        throw ConnectionError(me() + ": the address of rank " + std::to_string(peer) + " ('" +
                              addresses[peer] + "') is not a shared-memory address");
      }
      if (!parsed->shares_memory_with(address_)) {
        throw ConnectionError(me() + ": rank " + std::to_string(peer) +
                              " is on another host, /dev/shm, user or pid namespace (" +
                              parsed->host + "); it cannot be reached over shared memory");
      }
      pair->served = true;
      pair->address = *parsed;
      ++served;
    } else {
      pair->failure = {ErrorKind::kInvalid, "this shared-memory mesh does not serve rank " +
                                                std::to_string(peer) + " (another transport does)"};
    }
    pairs_[peer] = std::move(pair);
  }
  return served;
}

std::vector<std::string> ShmMesh::reserve_inboxes() {
  // Reserve the inboxes now, so that a memory limit is this error and never a SIGBUS on a
  // later write. Where declines are allowed (a mixed mesh with a transport after this one), an
  // inbox that cannot be reserved gives its pair back instead: marked refused in the header
  // (the inbox's own pages must not be touched), so that the peer gives it back too.
  std::vector<std::string> refused(static_cast<size_t>(size_));  // why, by peer
  for (auto& pair : pairs_) {
    if (!pair || !pair->served) continue;
    const int peer = pair->peer;
    int error = segment_->reserve(layout_.inbox_offset(peer), layout_.inbox_stride);
    if (error != 0) {
      std::string why = me() + " cannot reserve " + std::to_string(layout_.inbox_stride) +
                        " bytes of shared memory for the inbox of rank " + std::to_string(peer) +
                        ": " + std::strerror(error) + " (shared memory is full or limited)";
      if (!declines_allowed_ || static_cast<size_t>(peer) >= kRefusedBytes * 8) {
        throw ConnectionError(why +
                              "; free memory, lower GLOO_LITE_SHM_RING_BYTES, or use "
                              "GLOO_LITE_TRANSPORT=tcp");
      }
      header_->refused[peer / 8] |= static_cast<uint8_t>(1u << (peer % 8));
      if (header_->refuse_error == 0) header_->refuse_error = static_cast<uint32_t>(error);
      refused[peer] = why;
      continue;
    }
    pair->inbox.attach(segment_->data(), layout_, peer);
    pair->inbox.control->reserved.store(1, std::memory_order_release);
  }
  return refused;
}

void ShmMesh::publish_segment(uint64_t context_id) {
  header_->context_id = context_id;
  secret_ = auth::configured_secret();
  publish_auth(*header_, secret_.get());
  header_->ready.store(1, std::memory_order_release);
}

// Both ends give a pair back when either refused it (each reads the other's header once it is
// ready): the same verdict on both, so the next transport connects it on both.
void ShmMesh::give_back(Pair& pair, const std::string& why, bool here) {
  pair.served = false;
  pair.remote.reset();
  pair.failure = {ErrorKind::kInvalid, "this shared-memory mesh does not serve rank " +
                                           std::to_string(pair.peer) + " (" + why + ")"};
  decline(pair.peer, why, here);
}

void ShmMesh::reject_segment(const Pair& pair, const std::string& why) const {
  throw ConnectionError(me() + " rejected the segment of " + who(pair) + ": " + why +
                        "; stale store keys from another job, or mismatched sizes?");
}

SegmentHeader* ShmMesh::map_peer(Pair& pair, const Deadline& deadline) {
  // Sealed against resizing, or rejected (a segment its owner could shrink would SIGBUS us).
  pair.remote =
      SharedMemory::open(me() + " mapping " + who(pair), pair.address.pid, pair.address.fd);
  if (pair.remote->bytes() < kHeaderBytes) {
    reject_segment(pair, "it is not a gloo_lite segment (too small)");
  }
  auto* header = reinterpret_cast<SegmentHeader*>(pair.remote->data());
  if (header->magic != kMagic) reject_segment(pair, "not a gloo_lite segment (bad magic)");
  if (header->version != kVersion) {
    reject_segment(pair, "protocol version " + std::to_string(header->version) +
                             ", this rank speaks " + std::to_string(kVersion));
  }
  if (header->nonce != pair.address.nonce || header->pid != pair.address.pid) {
    reject_segment(pair,
                   "it is another segment than the address names (the descriptor was reused)");
  }
  if (header->segment_bytes != pair.remote->bytes()) {
    reject_segment(pair, "its size disagrees with its header");
  }
  // The peer sets ready without a doorbell: looked at every kReadyPoll.
  Backoff pause(kReadyPoll, kReadyPoll);
  while (header->ready.load(std::memory_order_acquire) == 0) {
    if (!pause.sleep(deadline)) {
      throw TimeoutError(me() + ": " + who(pair) +
                         " never published its segment before the deadline");
    }
  }
  return header;
}

bool ShmMesh::check_peer_header(Pair& pair, const SegmentHeader& header, uint64_t context_id,
                                Layout* layout) {
  const int peer = pair.peer;
  if (header.context_id != context_id) {
    reject_segment(pair, "it belongs to another context or job (context id " +
                             std::to_string(header.context_id) + ")");
  }
  if (header.rank != peer || header.size != size_) {
    reject_segment(
        pair, "it is rank " + std::to_string(header.rank) + " of " + std::to_string(header.size));
  }
  // Ring offsets are taken modulo this and a record may use a quarter of it.
  if (header.ring_bytes < kMinRingBytes || header.ring_bytes % kLine != 0) {
    reject_segment(pair, "its ring of " + std::to_string(header.ring_bytes) +
                             " bytes is invalid (at least " + std::to_string(kMinRingBytes) +
                             ", a multiple of " + std::to_string(kLine) + ")");
  }
  // One read of the peer's ring size: the layout checked here is the one say_hello attaches.
  Layout theirs = Layout::of(size_, header.ring_bytes);
  if (theirs.segment_bytes != header.segment_bytes || header.inbox_stride != theirs.inbox_stride) {
    reject_segment(pair, "its layout is inconsistent");
  }
  *layout = theirs;
  if (static_cast<size_t>(rank_) < kRefusedBytes * 8 &&
      ((header.refused[rank_ / 8] >> (rank_ % 8)) & 1) != 0) {
    std::string why = "rank " + std::to_string(peer) + " (pid " + std::to_string(pair.address.pid) +
                      ") cannot reserve " + std::to_string(header.inbox_stride) +
                      " bytes of shared memory for the inbox of rank " + std::to_string(rank_) +
                      ": " + std::strerror(header.refuse_error) +
                      " (shared memory is full or limited)";
    if (!declines_allowed_) reject_segment(pair, why);
    give_back(pair, why, /*here=*/false);
    return false;
  }
  if (std::string why = auth_disagreement(*header_, header, peer); !why.empty()) {
    throw ConnectionError(me() + " cannot pair with " + who(pair) + ": " + why);
  }
  return true;
}

void ShmMesh::say_hello(Pair& pair, SegmentHeader& header, const Layout& layout,
                        uint64_t context_id) {
  RingView view;
  view.attach(pair.remote->data(), layout, rank_);
  if (view.control->reserved.load(std::memory_order_acquire) == 0) {
    reject_segment(pair, "it does not serve rank " + std::to_string(rank_) +
                             " over shared memory (the transport table chose differently there)");
  }
  pair.remote_header = &header;
  pair.writer.attach(view);
  eager_bytes_ = std::min(eager_bytes_, pair.writer.max_payload() - kRecordBytes);
  std::string why;
  pair.cma = settings_.cma && probe_cma(pair.address.pid, header, &why);
  if (settings_.cma && !pair.cma) {
    LOG_INFO("shm", me() << ": process_vm_readv from " << who(pair) << " is not permitted (" << why
                         << "); large messages are pipelined through the ring");
  }
  pair.watch = std::make_unique<ProcessWatch>(pair.address.pid);
  if (secret_) {
    write_proof(*secret_, context_id, rank_, pair.peer, *header_, header, *view.control);
  }
  view.control->hello.store(1, std::memory_order_release);
  ring_doorbell(&header);
}

void ShmMesh::await_hellos(uint64_t context_id, const Deadline& deadline) {
  // Done when every served peer has mapped ours and said hello.
  for (;;) {
    uint64_t seen = header_->doorbell.value.load(std::memory_order_acquire);
    std::string late;
    for (auto& pair : pairs_) {
      if (!pair || !pair->served) continue;
      if (!hello_heard(*pair, context_id)) {
        late += (late.empty() ? "" : ", ") + describe_peer(pair->peer);
      }
    }
    if (late.empty()) return;
    if (deadline.expired()) {
      throw TimeoutError(me() + ": " + late +
                         " never mapped this rank's shared-memory segment before the deadline: "
                         "are those ranks running, and in the same job?");
    }
    sleep_while(header_->doorbell, seen, deadline, kConnectSlice);
  }
}

bool ShmMesh::hello_heard(Pair& pair, uint64_t context_id) {
  InboxControl* control = pair.inbox.control;
  if (control->hello.load(std::memory_order_acquire) != 0) {
    if (secret_ && !pair.proven) {
      if (!proof_holds(*secret_, context_id, pair.peer, rank_, *pair.remote_header, *header_,
                       *control)) {
        throw ConnectionError(
            me() + ": " + describe_peer(pair.peer) +
            " mapped this rank's shared-memory segment without a valid proof of the job's "
            "secret (another job's process, or another GLOO_LITE_AUTH_SECRET / "
            "GLOO_LITE_AUTH_FILE); refused");
      }
      pair.proven = true;
    }
    return true;
  }
  if (control->close_state.load(std::memory_order_acquire) ==
      static_cast<uint32_t>(CloseState::kAbort)) {
    // It gave up (its own connect failed): say why now rather than at the deadline.
    size_t bytes = std::min<size_t>(control->close_text_bytes, kCloseTextBytes);
    throw ConnectionError(me() + ": " + describe_peer(pair.peer) +
                          " aborted while connecting: " + std::string(control->close_text, bytes));
  }
  return false;
}

void ShmMesh::close_all() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  // Let queued records leave, briefly: a peer still reading gets our last messages.
  const Deadline until = Deadline::after(std::chrono::seconds(1));
  Backoff pause(kFlushPoll, kFlushPoll);
  for (;;) {
    bool queued = false;
    for (auto& pair : pairs_) queued = queued || (pair && pair->open && !pair->out.empty());
    if (!queued || until.expired()) break;
    progress();
    lock.unlock();
    pause.sleep(until);
    lock.lock();
  }
  // What peers wrote and nobody waited for is read once: a message of a call this rank has
  // passed is a mismatch to tell (and to warn of at close), not something dropped unseen. TCP's
  // event loop reads it without a waiter; a shm ring is read only here.
  progress();
  // A context that failed closes with its failure, not a goodbye: a peer still waiting on this
  // rank then learns the root cause (say, which rank died) instead of "closed".
  const Failure& failure = mesh_failure();
  for (auto& pair : pairs_) {
    if (!pair || !pair->open) continue;
    if (failure.failed()) {
      write_abort(*pair, failure.kind, failure.message);  // a peer's cause as that peer's
    } else {
      write_close(*pair, CloseState::kGoodbye, ErrorKind::kConnection, "");
    }
  }
  std::string message = "rank " + std::to_string(rank_) + " closed this context";
  fail_mesh(ErrorKind::kConnection, message);
  for (auto& pair : pairs_) {
    if (pair && pair->open) fail_pair(*pair, ErrorKind::kConnection, message);
  }
}

}  // namespace gloo_lite::shm
