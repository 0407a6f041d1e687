// The public side of a shared-memory mesh: its segment, waiting (the waiter drives the rings and
// sleeps on the doorbell), cancel, failure and liveness. Records are in shm_protocol.cc, the
// connect handshake and the close in shm_connect.cc.
#include "transport_shm/shm_mesh.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/names.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite::shm {
namespace {

using Clock = std::chrono::steady_clock;

// The longest a waiter sleeps before it looks at its deadline and its peers' processes again:
// a dead peer is noticed within about this much (the contract asks for 2 s).
constexpr auto kSleepSlice = std::chrono::milliseconds(100);
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);

// The word the connect probe reads with process_vm_readv: its address and value travel in the
// segment header.
const uint64_t probe_word = 0x70726f6265776f72ull;

uint64_t random_nonce() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device() ^ 1;
}

}  // namespace

MeshSettings settings_from_knobs(const transport::MeshOptions& options) {
  MeshSettings settings;
  settings.ring_bytes = static_cast<uint32_t>(knob_int("GLOO_LITE_SHM_RING_BYTES")) & ~uint32_t{63};
  size_t eager = options.eager_bytes ? options.eager_bytes
                                     : static_cast<size_t>(knob_int("GLOO_LITE_SHM_EAGER_BYTES"));
  // A record must leave room for others in flight: at most a quarter of the ring.
  settings.eager_bytes = std::min(eager, size_t{settings.ring_bytes} / 4 - kRecordBytes);
  settings.unexpected_bytes = options.unexpected_bytes
                                  ? options.unexpected_bytes
                                  : static_cast<size_t>(knob_int("GLOO_LITE_SHM_UNEXPECTED_BYTES"));
  settings.cma = knob_bool("GLOO_LITE_SHM_CMA");
  settings.spin_us = knob_int("GLOO_LITE_SHM_SPIN_US");
  return settings;
}

ShmMesh::ShmMesh(int rank, int size, const MeshSettings& settings)
    : MatchingMesh(rank, size, transport::kShmTransport), settings_(settings) {
  eager_bytes_ = settings.eager_bytes;
  unexpected_limit_ = settings.unexpected_bytes;
  unexpected_knob_ = "GLOO_LITE_SHM_UNEXPECTED_BYTES";
  layout_ = Layout::of(size, settings.ring_bytes);
  address_ = local_address();
  address_.nonce = random_nonce();
  // A memfd (gloo_lite/base/shared_memory.h): nothing is ever named in /dev/shm, and the memory
  // goes with the last mapping or descriptor, whatever way the processes end. Sealed against
  // resizing; sparse but for the header until connect reserves the inboxes of the peers it
  // serves.
  const std::string me = "rank " + std::to_string(rank);
  segment_ = SharedMemory::create(
      me + ": the shared-memory transport's segment", "gloo_lite_shm_rank" + std::to_string(rank),
      layout_.segment_bytes, kHeaderBytes,
      "lower GLOO_LITE_SHM_RING_BYTES, raise the limit (ulimit -f, memory), or use "
      "GLOO_LITE_TRANSPORT=tcp");
  header_ = reinterpret_cast<SegmentHeader*>(segment_->data());
  address_.fd = segment_->fd();
  header_->magic = kMagic;
  header_->version = kVersion;
  header_->ring_bytes = layout_.ring_bytes;
  header_->nonce = address_.nonce;
  header_->pid = address_.pid;
  header_->rank = rank;
  header_->size = size;
  header_->inbox_stride = layout_.inbox_stride;
  header_->segment_bytes = layout_.segment_bytes;
  header_->probe_address = reinterpret_cast<uint64_t>(&probe_word);
  header_->probe_value = probe_word;
  pairs_.resize(static_cast<size_t>(size));
}

ShmMesh::~ShmMesh() { close_all(); }

std::string ShmMesh::describe_peer(int peer) const {
  std::string text = "rank " + std::to_string(peer);
  if (peer >= 0 && peer < size_ && pairs_[peer] && pairs_[peer]->served) {
    text += " (pid " + std::to_string(pairs_[peer]->address.pid) + ")";
  }
  return text;
}

const Failure& ShmMesh::peer_failure(int peer) const {
  static const Failure not_served{
      ErrorKind::kInvalid,
      "this shared-memory mesh does not serve that peer (another transport does)"};
  return pairs_[peer] && pairs_[peer]->served ? pairs_[peer]->failure : not_served;
}

std::unique_ptr<transport::Memory> ShmMesh::register_memory(void* data, size_t bytes,
                                                            transport::MemoryKind kind) {
  if (kind != transport::MemoryKind::kHost) {
    throw InvalidArgument(
        "the shared-memory transport registers host memory only; stage device memory "
        "through a host buffer");
  }
  if (data == nullptr && bytes > 0) throw InvalidArgument("register_memory: null buffer");
  return std::make_unique<transport::Memory>(data, bytes, kind);
}

void ShmMesh::make_progress() {
  progress();
  if (Clock::now() >= next_liveness_check_) check_liveness();
}

bool ShmMesh::wait_until(const std::vector<transport::RequestPtr>& requests,
                         const Deadline& deadline, const Deadline& until) {
  const Deadline bound = until.earlier(deadline);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // Read before the inboxes: a record written after this read changes it, so the sleep
    // below cannot miss it.
    uint64_t seen = header_->doorbell.value.load(std::memory_order_acquire);
    make_progress();
    if (finished(requests, deadline)) return true;
    if (bound.expired()) return false;  // `until` came first (finished() threw at the deadline)
    sleep_on_doorbell(lock, seen, bound);
  }
}

bool ShmMesh::arrivals_pending() {
  // Without the mutex: the pairs and their inboxes (in this rank's own segment) are fixed once
  // connected, and head and tail are atomics; a record being read meanwhile only makes this
  // say yes (the caller then takes the mutex).
  for (const auto& pair : pairs_) {
    if (!pair || pair->inbox.control == nullptr) continue;
    const InboxControl* control = pair->inbox.control;
    if (control->head.load(std::memory_order_acquire) !=
        control->tail.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void ShmMesh::take_in_notice(int peer) {
  // (Under the mutex.) A closing pair's notice was read; it only waits for its leftovers.
  const Pair* pair = pairs_[peer].get();
  if (pair == nullptr || !pair->open || pair->closing || pair->inbox.control == nullptr) return;
  if (pair->inbox.control->close_state.load(std::memory_order_acquire) !=
      static_cast<uint32_t>(CloseState::kOpen)) {
    progress();
  }
}

transport::AbortCause ShmMesh::failure_cause() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // (One progress() reads every notice: the pairs it drained are closing after it.)
    for (int peer = 0; peer < static_cast<int>(pairs_.size()); ++peer) take_in_notice(peer);
  }
  return MatchingMesh::failure_cause();
}

bool ShmMesh::has_work_for_waiter() {
  // What the next round of progress would do at once (a mixed mesh asks between two).
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pulls_.empty() || !incoming_.empty()) return true;  // a large message in flight
  for (const auto& pair : pairs_) {
    if (!pair || !pair->open) continue;
    if (!pair->out.empty()) return true;  // records waiting for room in the peer's ring
    if (pair->closing) return true;       // a closing peer's leftovers to take in
    const InboxControl* control = pair->inbox.control;
    if (control->cancel_count.load(std::memory_order_acquire) != pair->cancels_read) return true;
    // Unread records, unless they may be held back for a full unexpected queue (those wait
    // for a receive, not for a reader).
    if (control->head.load(std::memory_order_acquire) !=
            control->tail.load(std::memory_order_relaxed) &&
        unexpected_has_room(eager_bytes_)) {
      return true;
    }
  }
  return false;
}

void ShmMesh::sleep_on_doorbell(std::unique_lock<std::mutex>& lock, uint64_t seen,
                                const Deadline& bound) {
  SharedWord& doorbell = header_->doorbell;
  WaitPolicy policy = wait_policy_;
  ++local_sleepers_;
  lock.unlock();
  // The doorbell moved: a record arrived (or room, or a notice) since `seen` was read.
  policy.wait(
      [&] { return doorbell.value.load(std::memory_order_acquire) != seen; },
      [&](const Deadline& until) { return sleep_while(doorbell, seen, until, kSleepSlice); },
      bound);
  lock.lock();
  --local_sleepers_;
  wait_policy_ = policy;
}

void ShmMesh::wake_polling_waiter() {
  // Another thread of this rank completed a request: ring our own doorbell for the threads
  // asleep on it (a cheap no-op while nobody sleeps).
  if (local_sleepers_ > 0) ring_doorbell(header_);
}

void ShmMesh::check_liveness() {
  next_liveness_check_ = Clock::now() + kLivenessPeriod;
  for (auto& pair : pairs_) {
    if (!pair || !pair->open) continue;
    bool gone = pair->watch && pair->watch->exited();
    if (!gone) continue;
    // What it wrote before it went stays deliverable, and an abort or goodbye it wrote is the
    // better reason.
    pair->closing = true;
    drain(*pair);
    if (!pair->open) continue;
    lose_pair(*pair, "lost " + describe_peer(pair->peer) +
                         ": its process exited without closing the context (did rank " +
                         std::to_string(pair->peer) + " crash, get killed or exit early?)");
  }
}

void ShmMesh::cancel_on_wire(const OpPtr& op, bool /*cleared*/, bool failing) {
  if (op->kind_ == Op::Kind::kRecv) {
    // Stop accepting data for it; a sender that pushes more finds no receive and its chunks
    // are dropped. A pending copy from the sender is not made, and the sender is told the
    // message is taken (as TCP's receiver reads and discards the payload of a cancelled one).
    if (op->id_ != 0) incoming_.erase(op->id_);
    for (auto it = pulls_.begin(); it != pulls_.end();) {
      if (it->op == op) {
        if (pairs_[it->peer]->open)
          queue_control(*pairs_[it->peer], RecordKind::kDone, it->send_id, 0);
        it = pulls_.erase(it);
      } else {
        ++it;
      }
    }
    return;
  }
  Pair& pair = *pairs_[op->peers_[0]];
  bool announcement_queued = false;
  // Streams the receiver cleared and waits for (some chunks may have left): its receive must
  // fail, not wait or complete short. Told after the loop: queueing appends to (and may pop)
  // the very queue the loop walks.
  std::vector<uint64_t> cleared_recv_ids;
  for (auto it = pair.out.begin(); it != pair.out.end();) {
    if (it->op != op) {
      ++it;
      continue;
    }
    if (it->record.kind == static_cast<uint32_t>(RecordKind::kReadyToSend)) {
      announcement_queued = true;
    }
    if (it->stream) cleared_recv_ids.push_back(it->record.a);
    it = pair.out.erase(it);
  }
  for (uint64_t recv_id : cleared_recv_ids) {
    queue_control(pair, RecordKind::kSendCancelled, recv_id, failing ? 1 : 0);
  }
  // A rendezvous send was announced unless its ready-to-send was still queued (erased above).
  bool announced = op->id_ != 0 && !announcement_queued;
  // The caller may write the buffer as soon as we return: write_cancel publishes the cancel
  // ordered before that (publish_before_reuse, segment.h).
  if (announced && pair.open) write_cancel(pair, op->id_ | (failing ? kFailingCancel : 0));
}

void ShmMesh::write_cancel(Pair& pair, uint64_t send_id) {
  // Out of band, so that it is seen after the receiver's next copy even when the ring is full
  // or the receiver holds records back: the receiver may copy from this buffer (CMA) as soon as
  // it matches, and must fail the receive instead of delivering what the caller writes next.
  InboxControl* control = pair.writer.control();
  uint64_t count = pair.cancels_written;
  if (count - control->cancel_seen.load(std::memory_order_acquire) >= kCancelSlots) {
    // The peer has not read our last cancels (it is stopped or stuck): close the pair instead,
    // out of band too; the receiver checks the close notice after every copy as well.
    std::string text = "rank " + std::to_string(rank_) + " could not tell " +
                       describe_peer(pair.peer) + " that it cancelled a send (" +
                       std::to_string(kCancelSlots) + " earlier cancels are still unread)";
    write_abort(pair, ErrorKind::kConnection, text);
    lose_pair(pair, text);
    return;
  }
  control->cancel_ids[count % kCancelSlots].store(send_id, std::memory_order_relaxed);
  // Ordered after the id above (release) and before the caller's next writes to the send's
  // buffer (acquire): pairs with the receiver's read_after_copy of cancel_count.
  publish_before_reuse(control->cancel_count, count + 1);
  pair.cancels_written = count + 1;
  ring_doorbell(pair.remote_header);
}

void ShmMesh::write_close(Pair& pair, CloseState state, ErrorKind kind, const std::string& text,
                          uint64_t tag, uint64_t posted, uint64_t sent) {
  if (pair.close_sent || !pair.served || pair.writer.control() == nullptr) return;
  pair.close_sent = true;
  InboxControl* control = pair.writer.control();
  control->close_kind = static_cast<uint32_t>(kind);
  control->close_tag = tag;
  control->close_posted = posted;
  control->close_sent = sent;
  size_t bytes = std::min(text.size(), kCloseTextBytes);
  std::memcpy(control->close_text, text.data(), bytes);
  control->close_text_bytes = static_cast<uint32_t>(bytes);
  // Ordered after the fields above (release) and before the buffers of pending sends go back
  // to their callers (acquire): pairs with the receiver's read_after_copy of close_state.
  publish_before_reuse(control->close_state, static_cast<uint32_t>(state));
  ring_doorbell(pair.remote_header);
}

void ShmMesh::write_abort(Pair& pair, ErrorKind kind, const std::string& reason) {
  transport::AbortCause cause = first_cause_.forward(rank_, mesh_failure(), reason);
  write_close(pair, CloseState::kAbort, kind, cause.text, static_cast<uint64_t>(cause.origin) + 1);
}

void ShmMesh::fail_pair(Pair& pair, ErrorKind kind, const std::string& message) {
  if (!pair.open) return;
  pair.open = false;
  pair.failure = {kind, message};
  for (auto& out : pair.out) {
    if (out.op) fail_op(out.op, kind, message);
  }
  pair.out.clear();
  for (auto it = incoming_.begin(); it != incoming_.end();) {
    if (it->second.op->source_ == pair.peer) {
      fail_op(it->second.op, kind, message);
      it = incoming_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = pulls_.begin(); it != pulls_.end();) {
    if (it->peer == pair.peer) {
      fail_op(it->op, kind, message);
      it = pulls_.erase(it);
    } else {
      ++it;
    }
  }
  fail_operations_of_peer(pair.peer, kind, message);
}

void ShmMesh::lose_pair(Pair& pair, const std::string& message, ErrorKind kind) {
  LOG_INFO("shm", message);  // the context warns once, when the failure reaches a call
  // The peer may be alive (a protocol error, a cancel it could not be told): it must stop
  // copying from buffers that go back to their callers below.
  if (pair.open) write_abort(pair, kind, message);
  fail_pair(pair, kind, message);
  fail_mesh(kind, message);
}

void ShmMesh::fail_mesh(ErrorKind kind, const std::string& message) {
  // A broken pair breaks the context: every rank's collectives depend on every peer. They
  // learn it now (out of band, as abort_locked tells them) rather than at their deadline, and
  // before the buffers of our pending sends go back to the callers: a peer checks the notice
  // after each copy from them (write_close orders each notice before the callers' next writes).
  for (auto& pair : pairs_) {
    if (pair && pair->open) write_abort(*pair, kind, message);
  }
  for (auto& pair : pairs_) {
    if (!pair || !pair->open) continue;
    for (auto& out : pair->out) {
      if (out.op) fail_op(out.op, kind, message);
    }
    // Records without a request (control) stay: the peer still needs its done records.
    pair->out.erase(std::remove_if(pair->out.begin(), pair->out.end(),
                                   [](const OutRecord& out) { return out.op != nullptr; }),
                    pair->out.end());
  }
  for (auto& [id, incoming] : incoming_) fail_op(incoming.op, kind, message);
  incoming_.clear();
  for (auto& pull : pulls_) fail_op(pull.op, kind, message);
  pulls_.clear();
  fail_all_operations(kind, message);
}

void ShmMesh::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  abort_locked(ErrorKind::kConnection, reason);
}

void ShmMesh::abort_locked(ErrorKind kind, const std::string& reason) {
  // The notice is out of band: it reaches the peer even when its ring is full. Records already
  // in the ring are read first. A mesh that failed before forwards that first cause.
  first_cause_.note({rank_, reason}, mesh_failure());
  for (auto& pair : pairs_) {
    if (pair && pair->open) write_abort(*pair, kind, reason);
  }
  std::string message = abort_message(first_cause_.forward(rank_, mesh_failure(), reason));
  LOG_INFO("shm", message << "; told its peers");
  fail_mesh(kind, message);
  for (auto& pair : pairs_) {
    if (pair && pair->open) fail_pair(*pair, kind, message);
  }
}

}  // namespace gloo_lite::shm
