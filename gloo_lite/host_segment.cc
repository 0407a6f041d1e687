#include "gloo_lite/host_segment.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/fingerprint.h"
#include "gloo_lite/hang_report.h"
#include "gloo_lite/transport/matching.h"

namespace gloo_lite {
namespace {

// The segment format: "gloosmh" and a version byte, read as a little-endian word. Version 2
// since the flag line carries the inline payloads: a rank of an older build refuses the
// segment instead of misreading its small reductions.
constexpr uint64_t kMagic = 0x32686d736f6f6c67;
constexpr size_t kReasonBytes = 1984;
// Fingerprints of a rank's last calls. A writer of pieces runs at most 2 * kPieces + 2 steps
// ahead of the slowest reader (it may not rewrite a piece or a buffer before every rank has
// left it), so in calls that each make a step it cannot overwrite the two compared
// (check_fingerprint); calls that make none (an allgather of empty blocks) could stretch that,
// and a lapped record is then skipped, never misread.
constexpr int kCallRing = 32;
static_assert(kCallRing > 2 * HostSegment::kPieces + 4, "the call ring must outlast a lead");
// A waiter looks at dead peers, its deadline and stray messages this often while it sleeps.
constexpr auto kSlice = std::chrono::milliseconds(20);

struct alignas(64) Header {
  uint64_t magic;
  uint64_t size;
  uint64_t chunk;
};

struct alignas(64) AbortRecord {
  std::atomic<uint32_t> state;  // 0: none, 1: being written, 2: written
  int32_t rank;                 // who wrote it
  int32_t origin;  // the rank where the failure began (abort_cause.h): `rank` unless relayed
  int32_t kind;
  char reason[kReasonBytes];
};

struct CallRecord {
  std::atomic<uint64_t> index;
  std::atomic<uint64_t> fingerprint;
};

constexpr size_t kControlOffset = sizeof(Header) + sizeof(AbortRecord);
constexpr size_t kPage = 4096;

Header& header_of(uint8_t* base) { return *reinterpret_cast<Header*>(base); }
AbortRecord& abort_of(uint8_t* base) {
  return *reinterpret_cast<AbortRecord*>(base + sizeof(Header));
}

// "rank 5": segment rank `rank` by its context rank (`context_ranks`, one per segment rank).
std::string name_in(const std::vector<int>& context_ranks, int rank) {
  return "rank " + std::to_string(context_ranks[rank]);
}

// Throws the context's mesh failure, if it failed: a peer that aborted (its call timed out, was
// interrupted, or its context was closed) before this rank came to set up the segment will never
// write the keys waited for here. A segment not made yet has no abort record, so the mesh is
// where that abort is (for shared memory, once failure_cause() has read the notice: no thread
// reads it while this rank is in no wait). A mismatch is raised as one (enter_collective), any
// other cause as the rank's where it began, as a host segment's abort record is.
void watch_mesh(ContextEngine& context, const algo::Call& call) {
  transport::Mesh& mesh = context.mesh();
  transport::AbortCause cause = mesh.failure_cause();
  if (!cause.known()) return;
  mesh.enter_collective(call.tag, call.fingerprint);
  if (cause.origin == context.rank()) throw ConnectionError(cause.text);
  std::string what = transport::describe_abort(cause, cause.origin,
                                               [](int r) { return "rank " + std::to_string(r); });
  throw transport::RelayedAbort(what, cause);
}

// Store reads in slices, so that a context that fails meanwhile (destroyed with this call in
// flight, aborted by a peer) ends the wait at once instead of at the deadline; after the first
// slice, a zero-byte receive from every peer under the call's tag makes a peer that left (its
// connection closed) or runs another algorithm (its messages' fingerprints) fail the wait too.
// `probe` false: no receives (see the last round of attach()).
std::vector<Bytes> read_keys(ContextEngine& context, const algo::Call& call,
                             const std::vector<int>& context_ranks,
                             const std::vector<std::string>& keys, bool probe = true) {
  std::vector<transport::RequestPtr> probes;
  auto cancel = [&] {
    for (const auto& probe : probes) call.mesh->cancel(probe);
  };
  try {
    for (;;) {
      Deadline slice = Deadline::after(std::chrono::milliseconds(50)).earlier(call.deadline);
      try {
        std::vector<Bytes> values = context.store()->multi_get(keys, slice);
        cancel();
        return values;
      } catch (const TimeoutError&) {
        if (call.deadline.expired()) throw;
        std::string failure = context.failure();
        if (!failure.empty()) {
          throw ConnectionError(context.describe() +
                                " failed while its ranks set up shared memory: " + failure);
        }
        watch_mesh(context, call);
      }
      if (probe && probes.empty()) {
        for (int peer = 0; peer < call.size; ++peer) {
          if (peer == call.rank) continue;
          probes.push_back(
              call.mesh->recv(peer, call.tag, *call.output_memory, 0, 0, call.fingerprint));
        }
      }
      for (const auto& probe : probes) {
        if (probe->test()) {
          // (A subset mesh's requests name the parent's ranks: source() is a context rank.)
          throw MismatchError("collective mismatch: " + name_in(context_ranks, call.rank) +
                              " received a message of rank " + std::to_string(probe->source()) +
                              " in " + describe_fingerprint(call.fingerprint, call.tag) +
                              ", which runs this call with another algorithm");
        }
      }
    }
  } catch (...) {
    cancel();
    throw;
  }
}

// "rank 5", "ranks 4 and 5": segment ranks by their context ranks.
std::string rank_word(const std::vector<int>& context_ranks, const std::vector<int>& ranks) {
  std::vector<int> named;
  for (int r : ranks) named.push_back(context_ranks[r]);
  return std::string(named.size() == 1 ? "rank " : "ranks ") + rank_list(named);
}

}  // namespace

// A rank's flag and what its peers read as soon as it moves, on one cache line: the record of
// its latest call (check_fingerprint) and, per buffer, a payload of up to kInlineBytes (the
// one-step reduction of the smallest vectors). One transfer brings a waiter all of it, where
// words on other lines would each cost one more cache miss on the critical path (at P = 2 an
// 8-byte allreduce made four transfers, now two).
struct alignas(64) FlagLine {
  SharedWord flag;
  CallRecord latest;  // the ring's record of the call begun last
  uint8_t payload[2][HostSegment::kInlineBytes];
};
static_assert(sizeof(FlagLine) == 64, "one cache line");

struct HostSegment::Control {
  FlagLine line;
  alignas(64) std::atomic<int64_t> pid;
  std::atomic<uint32_t> closed;
  std::atomic<uint64_t> words[HostSegment::kWords];  // post()/posted()
  alignas(64) CallRecord calls[kCallRing];
};

size_t HostSegment::data_offset(int size) {
  size_t control_end = kControlOffset + size_t(size) * sizeof(Control);
  return (control_end + kPage - 1) / kPage * kPage;  // the buffers start on a page
}

uint8_t* HostSegment::inline_payload(int rank, int buffer) const {
  return control(rank).line.payload[buffer];
}

HostSegment::Control& HostSegment::control(int rank) const {
  static_assert(sizeof(Control) % 64 == 0, "control blocks on cache lines");
  return reinterpret_cast<Control*>(memory_->data() + kControlOffset)[rank];
}

HostSegment::HostSegment(std::unique_ptr<SharedMemory> memory, int rank,
                         std::vector<int> context_ranks, size_t chunk, double ranks_per_core)
    : memory_(std::move(memory)),
      rank_(rank),
      size_(static_cast<int>(context_ranks.size())),
      context_ranks_(std::move(context_ranks)),
      chunk_(chunk),
      watches_(size_),
      checked_(size_, false),
      compared_(size_, 0),
      probes_(size_) {
  data_ = memory_->data() + data_offset(size_);
  policy_.configure_for(ranks_per_core, kDefaultWaitBounds);
}

std::unique_ptr<HostSegment> HostSegment::attach(ContextEngine& context, const algo::Call& call,
                                                 size_t chunk_bytes, const std::string& group,
                                                 const std::vector<int>& context_ranks) {
  const uint16_t stream = tags::stream_of(call.tag);
  const Deadline& deadline = call.deadline;
  const int rank = call.rank;
  const int size = call.size;
  std::vector<int> ranks = context_ranks;
  if (ranks.empty()) {
    for (int r = 0; r < size; ++r) ranks.push_back(r);
  }
  if (static_cast<int>(ranks.size()) != size) {
    throw InvalidArgument("HostSegment::attach: " + std::to_string(ranks.size()) +
                          " context ranks for a segment of " + std::to_string(size) + " ranks");
  }
  Store& store = *context.store();
  const std::string base =
      context.store_key("shm/" + std::to_string(stream) + "/" + (group.empty() ? "" : group + "/"));
  const std::string what =
      "shared-memory collectives of " + context.describe() + " on tag " + std::to_string(stream);
  size_t bytes = data_offset(size) + 2 * size_t(size) * chunk_bytes;

  std::unique_ptr<SharedMemory> memory;
  std::string verdict = "ok";  // or why this rank cannot take part
  if (rank == 0) {
    std::string handle;
    try {
      memory = SharedMemory::create(
          what, "gloo_lite_shm_coll", bytes, bytes,
          "free memory, raise the memory limit, or lower GLOO_LITE_SHM_CHUNK_BYTES");
      Header& header = header_of(memory->data());
      header.magic = kMagic;
      header.size = static_cast<uint64_t>(size);
      header.chunk = chunk_bytes;
      handle = memory->handle();
    } catch (const Error& e) {
      verdict = e.what();
      handle = "error " + verdict;
    }
    store.set(base + "handle", to_bytes(handle), deadline);
  } else {
    std::string handle = to_string(read_keys(context, call, ranks, {base + "handle"})[0]);
    if (handle.compare(0, 6, "error ") == 0) {
      verdict = name_in(ranks, 0) + " could not create the segment: " + handle.substr(6);
    } else {
      try {
        memory = SharedMemory::open(what, handle);
        const Header& header = header_of(memory->data());
        if (header.magic != kMagic) {
          throw Error(what +
                      ": the segment's format is not this build's (rank 0 runs another "
                      "gloo_lite version): run the same build on every rank");
        }
        if (header.size != uint64_t(size) || header.chunk != chunk_bytes) {
          throw Error(what + ": the segment's layout (" + std::to_string(header.size) +
                      " ranks, chunks of " + std::to_string(header.chunk) +
                      " bytes) differs from this rank's (" + std::to_string(size) + ", " +
                      std::to_string(chunk_bytes) +
                      "): is GLOO_LITE_SHM_CHUNK_BYTES the same on every rank?");
        }
      } catch (const Error& e) {
        verdict = e.what();
        memory.reset();
      }
    }
  }
  std::unique_ptr<HostSegment> segment;
  if (memory) {
    segment.reset(
        new HostSegment(std::move(memory), rank, ranks, chunk_bytes, context.ranks_per_core()));
    segment->control(rank).pid.store(getpid(), std::memory_order_release);
  }
  try {
    // Every rank's verdict, so that all of them use the segment or none does.
    store.set(base + "verdict/" + std::to_string(rank), to_bytes(verdict), deadline);
    std::vector<std::string> keys;
    for (int peer = 0; peer < size; ++peer) {
      if (peer != rank) keys.push_back(base + "verdict/" + std::to_string(peer));
    }
    std::vector<Bytes> verdicts = read_keys(context, call, ranks, keys);
    std::string failure = verdict == "ok" ? "" : name_in(ranks, rank) + ": " + verdict;
    for (size_t i = 0; i < verdicts.size() && failure.empty(); ++i) {
      std::string theirs = to_string(verdicts[i]);
      int peer = static_cast<int>(i) + (static_cast<int>(i) >= rank ? 1 : 0);
      if (theirs != "ok") failure = name_in(ranks, peer) + ": " + theirs;
    }
    if (!failure.empty()) {
      // The ranks now run a message algorithm under this call's tag and fingerprint. A rank still
      // in read_keys above may hold a probe (a zero-byte receive under that tag), which would
      // take a faster rank's first message and fail it as a size mismatch. So one more round
      // before any rank sends: each says it has taken its probes back, and waits, posting none,
      // until all have (a rank that gets here has published its verdict: it runs this call).
      store.set(base + "left/" + std::to_string(rank), to_bytes("1"), deadline);
      std::vector<std::string> left;
      for (int peer = 0; peer < size; ++peer) {
        if (peer != rank) left.push_back(base + "left/" + std::to_string(peer));
      }
      read_keys(context, call, ranks, left, /*probe=*/false);
      throw SegmentUnavailable(failure);
    }
    // Everyone has mapped it: nobody else may open it from now on.
    if (rank == 0) segment->memory_->close_handle();
    pid_t own = getpid();
    for (int peer = 0; peer < size; ++peer) {
      pid_t pid = static_cast<pid_t>(segment->control(peer).pid.load(std::memory_order_acquire));
      if (peer != rank && pid != own) segment->watches_[peer] = std::make_unique<ProcessWatch>(pid);
    }
    return segment;
  } catch (const SegmentUnavailable&) {
    throw;  // every rank has the same verdict: nobody uses the segment
  } catch (const std::exception& e) {
    // A peer may have mapped the segment and gone on into the call, which waits for this rank
    // there and would read only its closed mark (~HostSegment): leave it the cause first, as a
    // failed call leaves it in a segment of the context (ContextEngine::fail), the origin's when
    // the failure came from another rank, the context's own when it failed meanwhile.
    if (segment) {
      transport::AbortCause cause = context.mesh().failure_cause();
      if (!cause.known()) {
        std::string failure = context.failure();
        cause = {ranks[rank], failure.empty() ? e.what() : failure};
      }
      bool mismatch = dynamic_cast<const MismatchError*>(&e) != nullptr;
      segment->abort(ranks[rank],
                     mismatch ? transport::ErrorKind::kMismatch : transport::ErrorKind::kConnection,
                     cause);
    }
    throw;
  }
}

HostSegment::~HostSegment() {
  const AbortRecord& record = abort_of(memory_->data());
  if (!abort_seen_.load(std::memory_order_relaxed) &&
      record.state.load(std::memory_order_acquire) == 2 &&
      static_cast<transport::ErrorKind>(record.kind) == transport::ErrorKind::kMismatch) {
    LOG_WARN("context",
             "rank " << record.origin << " found a collective mismatch on the "
                     << "shared-memory segment after this rank's last call on it "
                     << "returned: "
                     << std::string(record.reason, strnlen(record.reason, kReasonBytes)));
  }
  Control& mine = control(rank_);
  mine.closed.store(1, std::memory_order_release);
  // Whoever sleeps on this rank's flag must look again (and see it closed).
  wake_all(mine.line.flag);
}

void HostSegment::begin(const algo::Call& call) {
  call_ = &call;
  // A rank that failed (or timed out waiting for this one) may have left this rank nothing to
  // wait for in this call: look before computing a result.
  if (abort_of(memory_->data()).state.load(std::memory_order_acquire) == 2) {
    raise_abort();
  }
  // A call that runs here posts nothing on the mesh, so nothing would judge the messages that
  // wait for this rank there (a stray of an earlier call that ran on messages, say with an
  // algorithm named by the user), and the shm transport would not even read them: the mesh
  // does it now, as a post of this call would. What it finds fails the ranks here too.
  if (call.context != nullptr) {
    transport::Mesh& mesh = call.context->mesh();
    try {
      mesh.enter_collective(call.tag, call.fingerprint);
    } catch (const MismatchError& e) {
      // The mesh's cause as it began (its origin, its words), not this rank's account of it
      // ("rank 1 aborted: ..."), which the ranks here would relay nested.
      transport::AbortCause cause = mesh.failure_cause();
      if (!cause.known()) cause = {context_ranks_[rank_], e.what()};
      abort(context_ranks_[rank_], transport::ErrorKind::kMismatch, cause);
      throw;
    }
  }
  call_start_ = seq_;
  std::fill(checked_.begin(), checked_.end(), false);
  CallRecord& record = control(rank_).calls[calls_ % kCallRing];
  if (calls_ > 0) {
    previous_fingerprint_ = current_fingerprint_;
    previous_tag_ = current_tag_;
  }
  current_fingerprint_ = call.fingerprint;
  current_tag_ = call.tag;
  // The ring's record and its copy on the flag line, each the index first, the fingerprint
  // released after it: a reader that acquires the fingerprint and then finds the index it
  // expects has that call's fingerprint (check_fingerprint).
  for (CallRecord* written : {&record, &control(rank_).line.latest}) {
    written->index.store(calls_, std::memory_order_relaxed);
    written->fingerprint.store(call.fingerprint, std::memory_order_release);
  }
  ++calls_;  // published with this rank's next flag (a release store)
}

void HostSegment::end() {
  for (transport::RequestPtr& probe : probes_) {
    if (probe) call_->mesh->cancel(probe);
    probe.reset();
  }
  call_ = nullptr;
}

void HostSegment::publish() { gloo_lite::publish(control(rank_).line.flag, ++seq_); }

void HostSegment::post(int index, uint64_t word) {
  control(rank_).words[index].store(word, std::memory_order_relaxed);
}

void HostSegment::post_ordered(int index, uint64_t word) {
  control(rank_).words[index].store(word, std::memory_order_seq_cst);
}

bool HostSegment::gone(int rank) const {
  return control(rank).closed.load(std::memory_order_acquire) != 0 ||
         (watches_[rank] && watches_[rank]->exited());
}

uint64_t HostSegment::posted(int rank, int index) const {
  return control(rank).words[index].load(std::memory_order_seq_cst);  // see post_ordered()
}

int64_t HostSegment::pid(int rank) const {
  return control(rank).pid.load(std::memory_order_acquire);
}

int HostSegment::next_buffer() {
  int buffer = next_buffer_;
  next_buffer_ ^= 1;
  ++uses_[buffer];
  return buffer;
}

HostSegment::Piece HostSegment::next_piece() {
  const int buffer = next_buffer();
  const size_t index = static_cast<size_t>(uses_[buffer] % kPieces);
  return {buffer, index * piece_bytes(), index};
}

HostSegment::Piece HostSegment::acquire_piece() {
  Piece piece = next_piece();
  wait_all(std::max(whole_after_[piece.buffer], piece_after_[piece.buffer][piece.index]));
  return piece;
}

void HostSegment::release_piece(const Piece& piece, uint64_t seq) {
  piece_after_[piece.buffer][piece.index] = seq;
  free_after_[piece.buffer] = seq;
}

int HostSegment::acquire_buffer() {
  int buffer = next_buffer();
  wait_all(free_after_[buffer]);
  return buffer;
}

void HostSegment::wait_all(uint64_t target) {
  if (target <= everyone_reached_) return;
  uint64_t lowest = UINT64_MAX;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    wait_for(peer, target);
    // Acquire: a later wait_all that this count answers (everyone_reached_) reads data
    // published with it, without a load of its own.
    lowest = std::min(lowest, control(peer).line.flag.value.load(std::memory_order_acquire));
  }
  everyone_reached_ = std::min(lowest, seq_);
}

void HostSegment::wait_for(int peer, uint64_t target) {
  SharedWord& flag = control(peer).line.flag;
  auto reached = [&] { return flag.value.load(std::memory_order_acquire) >= target; };
  if (!reached()) {
    auto sleep = [&](const Deadline& until) {
      uint64_t seen = flag.value.load(std::memory_order_acquire);
      return seen >= target || (sleep_while(flag, seen, until, kSlice) && reached());
    };
    // The slice (a look at dead peers and stray messages) starts when the first wait comes back
    // without the flag, not before it: most waits end within the policy's first checks, and a
    // clock read here would cost about as much as the flag's transfer. Each wait sleeps at most
    // kSlice (sleep_while), so a dead peer is still seen within two slices.
    Deadline slice = Deadline::never();
    while (!policy_.wait(reached, sleep, call_->deadline)) {
      if (slice.is_never()) slice = Deadline::after(kSlice);
      bool slice_over = slice.expired();
      check_while_waiting(peer, target, slice_over);
      if (slice_over) slice = Deadline::after(kSlice);
    }
  }
  if (!checked_[peer] && target > call_start_) check_fingerprint(peer);
}

void HostSegment::check_fingerprint(int peer) {
  checked_[peer] = true;
  // This call's fingerprint, then the one before: in a call where some ranks wait for only one
  // peer (the readers of a small broadcast wait for its root, the root for nobody), two groups
  // that each agree among themselves (two "roots") meet nowhere; the next call in which they wait
  // for each other finds it.
  const uint64_t compared_before = compared_[peer];  // this loop updates it
  for (uint64_t back = 1; back <= 2 && back <= calls_; ++back) {
    const uint64_t index = calls_ - back;
    if (back == 2 && compared_before == index + 1) break;  // the call before compared it
    const uint64_t mine = back == 1 ? call_->fingerprint : previous_fingerprint_;
    // This call's record on the flag line (the line this rank has just waited for), else in the
    // ring (the line holds only the latest call). Each was written before the flag this rank
    // waited for, so it holds `index` or a later call's: the fingerprint is read before the index
    // (begin() writes them in the other order), and a record being rewritten for a later call
    // shows that call's index and is skipped.
    uint64_t theirs = 0;
    auto holds_index = [&](const CallRecord& record) {
      theirs = record.fingerprint.load(std::memory_order_acquire);
      return record.index.load(std::memory_order_relaxed) == index;
    };
    const Control& peer_control = control(peer);
    if (!(back == 1 && holds_index(peer_control.line.latest)) &&
        !holds_index(peer_control.calls[index % kCallRing])) {
      continue;  // the peer moved on past it (the others compare)
    }
    if (back == 1) compared_[peer] = index + 1;
    if (theirs == mine) continue;  // the same call
    const uint64_t tag = back == 1 ? call_->tag : previous_tag_;
    std::string text = "collective mismatch: " + name(rank_) + " in " +
                       describe_fingerprint(mine, tag) + " found " + name(peer) + " in " +
                       describe_fingerprint(theirs, tag) + " on the shared-memory segment";
    if (back == 2) {
      text += " (the call before " + describe_fingerprint(call_->fingerprint, call_->tag) +
              ", found when the ranks next waited for each other)";
    }
    text += "; the calls differ in " + fingerprint_difference(mine, theirs) +
            ". Every rank must call the same collectives in the same order with the same type, "
            "op, root, counts and algorithm (GLOO_LITE_CHECK=1 compares every pair before each "
            "call)";
    abort(context_ranks_[rank_], transport::ErrorKind::kMismatch, text);
    // Ranks that wait on messages (another algorithm, another collective, another host) must
    // learn it too, as a mismatch: the context's mesh, whatever view of it this call runs on
    // (a hierarchical phase's subset) and however many transports it mixes.
    call_->context->mesh().abort_with(transport::ErrorKind::kMismatch, text);
    throw MismatchError(text);
  }
}

void HostSegment::check_while_waiting(int peer, uint64_t target, bool slice_over) {
  const AbortRecord& record = abort_of(memory_->data());
  if (record.state.load(std::memory_order_acquire) == 2) raise_abort();
  if (!slice_over) return;
  const Control& theirs = control(peer);
  if (theirs.closed.load(std::memory_order_acquire) != 0) {
    throw ConnectionError(name(peer) + " closed its context while " + name(rank_) +
                          " waited for it in " + what());
  }
  if (watches_[peer] && watches_[peer]->exited()) {
    throw ConnectionError(name(peer) + " (pid " + std::to_string(watches_[peer]->pid()) +
                          ") died while " + name(rank_) + " waited for it in " + what());
  }
  // A peer that runs another algorithm of this call sends messages that nobody here receives:
  // a receive under the call's tag lets the transport compare their fingerprint with this
  // call's (MismatchError). Only from the rank waited for: it cannot have finished the call.
  transport::RequestPtr& probe = probes_[peer];
  if (!probe) {
    probe = call_->mesh->recv(peer, call_->tag, *call_->output_memory, 0, 0, call_->fingerprint);
  }
  if (probe->test()) {
    throw MismatchError("collective mismatch: " + name(rank_) + " in " +
                        describe_fingerprint(call_->fingerprint, call_->tag) +
                        " received a message of " + name(peer) +
                        ", which runs this call with another algorithm");
  }
  if (call_->deadline.expired()) {
    std::vector<int> behind;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && control(r).line.flag.value.load(std::memory_order_acquire) < target) {
        behind.push_back(r);
      }
    }
    if (behind.empty()) behind.push_back(peer);
    throw TimeoutError(rank_word(context_ranks_, behind) + " did not reach step " +
                       std::to_string(target - call_start_) + " of " + what() +
                       " before the deadline (" + name(rank_) + " waited)");
  }
}

void HostSegment::raise_abort() const {
  abort_seen_.store(true, std::memory_order_relaxed);
  const AbortRecord& record = abort_of(memory_->data());
  std::string reason(record.reason, strnlen(record.reason, kReasonBytes));
  auto kind = static_cast<transport::ErrorKind>(record.kind);
  transport::AbortCause cause{record.origin, reason};
  if (kind == transport::ErrorKind::kMismatch) {
    throw transport::RelayedMismatch(reason, std::move(cause));
  }
  std::string what = transport::describe_abort(cause, record.rank,
                                               [](int r) { return "rank " + std::to_string(r); });
  throw transport::RelayedAbort(what, std::move(cause));
}

void HostSegment::abort(int rank, transport::ErrorKind kind, const std::string& reason) {
  abort(rank, kind, {rank, reason});
}

void HostSegment::abort(int rank, transport::ErrorKind kind, const transport::AbortCause& cause) {
  const std::string& reason = cause.text;
  abort_seen_.store(true, std::memory_order_relaxed);
  AbortRecord& record = abort_of(memory_->data());
  uint32_t none = 0;
  if (!record.state.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) return;
  record.rank = rank;
  // ContextEngine ranks, as the callers give them (a group segment's own ranks differ: this class
  // writes context_ranks_[rank_]); the origin came through the mesh, which checked it against
  // the context's size.
  record.origin = cause.known() ? cause.origin : rank;
  record.kind = static_cast<int32_t>(kind);
  size_t length = std::min(reason.size(), kReasonBytes - 1);
  std::memcpy(record.reason, reason.data(), length);
  record.reason[length] = '\0';
  record.state.store(2, std::memory_order_release);
  for (int r = 0; r < size_; ++r) wake_all(control(r).line.flag);
}

std::string HostSegment::name(int rank) const { return name_in(context_ranks_, rank); }

std::string HostSegment::what() const {
  if (call_ == nullptr) return "the shared-memory segment";
  return std::string(algo::collective_name(call_->collective)) + " (shm, " +
         tags::describe(call_->tag) + ") on the shared-memory segment";
}

}  // namespace gloo_lite
