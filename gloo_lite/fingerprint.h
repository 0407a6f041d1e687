// Collective mismatch detection. Every collective on a context has a sequence number (per tag)
// and a fingerprint: collective, type, op, root, counts and the algorithm picked. In check mode
// (GLOO_LITE_CHECK=1 or CollectiveOptions::check) ranks exchange fingerprints before any data
// moves and every rank throws the same MismatchError naming the disagreeing ranks.
#pragma once

#include <cstdint>
#include <string>

#include "gloo_lite/algorithms/call.h"

namespace gloo_lite {

// Transport tag layout of collectives: bits 63..48 the user's tag, bit 47 marks fingerprint
// traffic, bits 46..0 the call's sequence number.
constexpr uint64_t kCheckBit = uint64_t{1} << 47;
constexpr uint64_t kSequenceMask = kCheckBit - 1;

void check_fingerprints(const algo::Call& call, const std::string& algorithm);

}  // namespace gloo_lite
