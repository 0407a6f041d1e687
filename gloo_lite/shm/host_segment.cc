#include "gloo_lite/shm/host_segment.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/fingerprint.h"
#include "gloo_lite/hang_report.h"
#include "gloo_lite/shm/segment_layout.h"
#include "gloo_lite/transport/matching.h"

namespace gloo_lite {

// The segment's layout (segment_layout.h): the header, the abort record, the control blocks.
using namespace segment_layout;

namespace {

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

}  // namespace

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

}  // namespace gloo_lite
