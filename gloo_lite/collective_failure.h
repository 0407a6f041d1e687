// What a collective does when it fails on this rank: the failure becomes the context's (a
// collective that failed on one rank cannot complete on the others), and the error says which
// call failed, on which rank, and why.
//  - a timeout first asks the other ranks where they are (hang_report.h), so that every rank
//    names the ranks that never arrived, not just the neighbour it waited for;
//  - a local cause (timeout, mismatch, a user reduction that throws, ...) is sent to every peer,
//    which then fails at once with this reason and this rank's number instead of "closed";
//  - a cause that came from a peer (ConnectionError) is not sent on: that peer told everyone.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

#include "gloo_lite/context_engine.h"

namespace gloo_lite {

// Everything a rank does between a collective's deadline and its TimeoutError: finding the
// ranks that never arrived (hang_report.h, store calls included), telling its peers (the abort
// flush) and the failure report. One budget for all of it, so that a rank cut off from the
// store and its peers alike still raises within deadline + this, whatever it cannot reach
// (docs/reliability.md, the link cut). 500 ms: the ranks of a stuck call time out within a few
// milliseconds of each other, so a 300 ms grace for their reports is plenty, and the rest
// bounds the flush and the report.
constexpr std::chrono::milliseconds kAfterTimeoutBudget{500};
// The part of it kept for the abort flush and the failure report, after the hang reports.
constexpr std::chrono::milliseconds kAfterTimeoutTail{150};

struct FailedCall {
  ContextEngine* context;
  std::string what;       // "allreduce #57 on tag 0"
  std::string arguments;  // "float32 sum, 1024 elements, ring"
  uint16_t tag;
  uint64_t sequence;
  std::chrono::milliseconds timeout;
};

// Fails the context as described above and throws: the same error type with the call's
// description in front, or, for an exception that is not a gloo_lite::Error (a custom
// reduction's), that exception itself.
[[noreturn]] void fail_collective(const FailedCall& call, std::exception_ptr error);

}  // namespace gloo_lite
