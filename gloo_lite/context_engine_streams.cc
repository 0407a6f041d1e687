// ContextEngine's per-stream resources, each made at its first use and kept until the engine
// goes: the streams of collectives, their scratch memory and their shared host segments.
#include <string>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/shm/host_segment.h"
#include "gloo_lite/stream.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite {

detail::Stream& ContextEngine::stream(uint16_t tag) {
  if (tag == 0) {
    if (detail::Stream* known = default_stream_.load(std::memory_order_acquire)) return *known;
  }
  std::lock_guard<std::mutex> lock(streams_mutex_);
  auto found = streams_.find(tag);
  if (found != streams_.end()) return *found->second;
  if (closing_.load(std::memory_order_relaxed)) {
    throw ConnectionError(describe() + " was closed or is being destroyed; create a new context");
  }
  detail::Stream& made =
      *streams_.emplace(tag, std::make_shared<detail::Stream>(*this, tag)).first->second;
  if (tag == 0) default_stream_.store(&made, std::memory_order_release);
  return made;
}

ContextEngine::ScratchSpace ContextEngine::scratch(uint16_t tag, size_t bytes) {
  detail::Stream::Scratch space = stream(tag).scratch(*mesh_, bytes);
  return {space.data, space.memory};
}

HostSegment* ContextEngine::host_segment(const algo::Call& call, size_t chunk_bytes,
                                         const std::string& group,
                                         const std::vector<int>& group_ranks) {
  const uint16_t tag = tags::stream_of(call.tag);
  if (tag == 0) {
    if (HostSegment* known = default_segment_.load(std::memory_order_acquire)) return known;
  }
  {
    std::lock_guard<std::mutex> lock(segments_mutex_);
    auto found = segments_.find(tag);
    if (found != segments_.end()) return found->second.get();
  }
  // Outside the lock: attaching waits for the peers, and fail() must not wait for that. Only
  // an agreed verdict falls back; a peer that never comes fails the call like any other.
  std::unique_ptr<HostSegment> segment;
  try {
    segment = HostSegment::attach(*this, call, chunk_bytes, group, group_ranks);
  } catch (const SegmentUnavailable& e) {
    std::string text = "shared-memory collectives on tag " + std::to_string(tag) + " of " +
                       describe() + (group.empty() ? "" : " (group " + group + ")") +
                       " are not available (" + e.what() +
                       "); using the message algorithms instead";
    if (call.rank == 0) {  // the group's first rank: one warning per segment
      LOG_WARN("coll", text);
    } else {
      LOG_INFO("coll", text);
    }
  }
  std::lock_guard<std::mutex> lock(segments_mutex_);
  HostSegment* raw = segment.get();
  segments_[tag] = std::move(segment);
  if (tag == 0 && raw != nullptr) default_segment_.store(raw, std::memory_order_release);
  // A failure that came while attaching must reach this segment's waiters as well.
  std::string failed = failure();
  if (raw != nullptr && !failed.empty()) {
    raw->abort(rank_, transport::ErrorKind::kConnection, failed);
  }
  return raw;
}

}  // namespace gloo_lite
