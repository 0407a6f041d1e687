// Collective mismatch detection. Every collective on a context has a sequence number (per tag)
// and a fingerprint: collective, type, op, root, counts and the algorithm picked.
//  - Always: the call's 64-bit fingerprint (call_fingerprint) travels in the header of every
//    message its algorithm sends, and the transport compares it with the receive's where the
//    message lands; a rank that receives a message of another call throws MismatchError naming
//    both calls and aborts the context with that cause, so every rank fails promptly. No extra
//    message, and ranks that exchange no message cannot see each other's disagreement.
//  - Check mode (GLOO_LITE_CHECK=1 or CollectiveOptions::check): ranks exchange full
//    fingerprints with every other rank before any data moves (two rounds) and every rank
//    throws the same MismatchError naming the disagreeing ranks.
#pragma once

#include <cstdint>
#include <string>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite {

// The verdict of check_fingerprints: every rank found the same disagreement before any data
// moved, so the context is intact (unlike any other MismatchError).
class AgreedMismatch : public MismatchError {
 public:
  using MismatchError::MismatchError;
};

void check_fingerprints(const algo::Call& call, const std::string& algorithm);

namespace algo {
struct Algorithm;
}

// The 64-bit fingerprint that `call`'s messages carry when run with `algorithm`. Ranks in the
// same call get the same value; it decodes into a readable description of the call (the
// transport prints it through the describer this file registers). Layout, high bits first:
// 1 (never 0, which means unchecked), 3-bit layout version, collective (4), type (4), op (4,
// reducing collectives only), algorithm (6, its registry index + 1), root (19, rooted
// collectives only), a 23-bit hash of the counts (0 for alltoall(v), whose counts are pairwise:
// the size check of each message covers them).
uint64_t call_fingerprint(const algo::Call& call, const algo::Algorithm& algorithm);

// "allreduce #12 (float32, sum, algorithm ring, counts #3a9f01)", and what two fingerprints
// disagree on ("the type and the root"): for mismatches found outside the transport (the
// shared-memory collectives compare fingerprints in their segment).
std::string describe_fingerprint(uint64_t fingerprint, uint64_t tag);
std::string fingerprint_difference(uint64_t mine, uint64_t theirs);

}  // namespace gloo_lite
