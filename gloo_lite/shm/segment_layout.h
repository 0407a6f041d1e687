// The layout of a host segment in memory (host_segment.h describes it): the header, the abort
// record, each rank's control block. Shared by host_segment.cc (creating and attaching it) and
// host_segment_sync.cc (the steps' flags, waits and abort record). Internal to gloo_lite/shm/.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gloo_lite/shm/host_segment.h"

namespace gloo_lite::segment_layout {

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

inline Header& header_of(uint8_t* base) { return *reinterpret_cast<Header*>(base); }
inline AbortRecord& abort_of(uint8_t* base) {
  return *reinterpret_cast<AbortRecord*>(base + sizeof(Header));
}

// "rank 5": segment rank `rank` by its context rank (`context_ranks`, one per segment rank).
inline std::string name_in(const std::vector<int>& context_ranks, int rank) {
  return "rank " + std::to_string(context_ranks[rank]);
}

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

}  // namespace gloo_lite::segment_layout

namespace gloo_lite {

struct HostSegment::Control {
  segment_layout::FlagLine line;
  alignas(64) std::atomic<int64_t> pid;
  std::atomic<uint32_t> closed;
  std::atomic<uint64_t> words[HostSegment::kWords];  // post()/posted()
  alignas(64) segment_layout::CallRecord calls[segment_layout::kCallRing];
};

}  // namespace gloo_lite
