// Internal to the matching engine (matching.h): the collective calls this rank has posted
// under, per stream, so that a message that no receive took can be judged where it waits.
//
// A collective's tag is its stream and its sequence number on that stream (tag_space.h), and a
// stream runs its calls one at a time and in order on every rank (gloo_lite/stream.h). Every
// message of call #n that is meant for this rank is received by this rank's call #n. So once
// this rank has posted under #m, a waiting message of call #n is
//  - of a call this rank has not reached (n after m): the normal early message of a fast peer;
//  - of the call this rank is in or has just finished (n == m): fine if its fingerprint is the
//    same, a mismatch if not (another call under the same number);
//  - of a call this rank has passed (n before m): no call of this rank will ever receive it, a
//    mismatch whatever its fingerprint.
// Only posts with a checked fingerprint (collectives, not point-to-point or the call check's
// own traffic) are noted. The state is a few words per stream; the common post is one lookup.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>

#include "gloo_lite/transport/tag_space.h"
#include "gloo_lite/transport/transport.h"

namespace gloo_lite::transport {

class CallHistory {
 public:
  enum class Verdict {
    kNotReached,  // a call this rank has not posted under yet (or an unchecked message)
    kSameCall,    // the latest call on the stream, same fingerprint
    kOtherCall,   // the latest call's number, another fingerprint
    kPassed,      // a call before the latest on the stream
  };

  static bool tracked(uint64_t tag, uint64_t fingerprint) {
    return fingerprint != kUnchecked && !tags::is_point_to_point(tag) &&
           (tag & tags::kCheckBit) == 0;
  }

  // Notes a post under `tag` of the call `fingerprint`. True when it starts a call this rank
  // had not posted under before (the stream moved on): the caller then judges what waits.
  // `previous` gets the number of the call posted under before on the stream, kNone if none.
  static constexpr uint64_t kNone = ~uint64_t{0};
  bool enter(uint64_t tag, uint64_t fingerprint, uint64_t* previous) {
    *previous = kNone;
    if (!tracked(tag, fingerprint)) return false;
    Stream& stream = streams_[tags::stream_of(tag)];
    uint64_t sequence = tags::sequence_of(tag);
    if (stream.calls > 0) {
      const Entry& latest = stream.ring[(stream.calls - 1) % kKept];
      if (latest.sequence == sequence || before(sequence, latest.sequence)) return false;
      *previous = latest.sequence;
    }
    stream.ring[stream.calls % kKept] = {sequence, fingerprint};
    ++stream.calls;
    return true;
  }

  Verdict judge(uint64_t tag, uint64_t fingerprint) const {
    if (!tracked(tag, fingerprint)) return Verdict::kNotReached;
    auto found = streams_.find(tags::stream_of(tag));
    if (found == streams_.end() || found->second.calls == 0) return Verdict::kNotReached;
    const Stream& stream = found->second;
    const Entry& latest = stream.ring[(stream.calls - 1) % kKept];
    uint64_t sequence = tags::sequence_of(tag);
    if (sequence == latest.sequence) {
      return fingerprint == latest.fingerprint ? Verdict::kSameCall : Verdict::kOtherCall;
    }
    return before(sequence, latest.sequence) ? Verdict::kPassed : Verdict::kNotReached;
  }

  // This rank's fingerprint of the call under `tag`, kUnchecked when it is no longer (or never
  // was) among the last few calls it posted under on that stream.
  uint64_t fingerprint_of(uint64_t tag) const {
    auto found = streams_.find(tags::stream_of(tag));
    if (found == streams_.end()) return kUnchecked;
    const Stream& stream = found->second;
    for (uint64_t i = 0; i < kKept && i < stream.calls; ++i) {
      const Entry& entry = stream.ring[(stream.calls - 1 - i) % kKept];
      if (entry.sequence == tags::sequence_of(tag)) return entry.fingerprint;
    }
    return kUnchecked;
  }

  // The tag of the latest call this rank posted under on `tag`'s stream (`tag` if none).
  uint64_t latest_tag(uint64_t tag) const {
    auto found = streams_.find(tags::stream_of(tag));
    if (found == streams_.end() || found->second.calls == 0) return tag;
    const Stream& stream = found->second;
    return tags::collective(tags::stream_of(tag), stream.ring[(stream.calls - 1) % kKept].sequence);
  }

  // Whether call number `a` comes before `b` (46-bit numbers that wrap: the nearer way round).
  static bool before(uint64_t a, uint64_t b) {
    uint64_t distance = (b - a) & tags::kSequenceMask;
    return distance != 0 && distance <= (tags::kSequenceMask >> 1);
  }

 private:
  // Enough to name this rank's own call in the error for a message a few calls late.
  static constexpr uint64_t kKept = 4;
  struct Entry {
    uint64_t sequence = 0;
    uint64_t fingerprint = kUnchecked;
  };
  struct Stream {
    std::array<Entry, kKept> ring;
    uint64_t calls = 0;  // entered so far; the latest is ring[(calls - 1) % kKept]
  };
  std::unordered_map<uint16_t, Stream> streams_;
};

}  // namespace gloo_lite::transport
