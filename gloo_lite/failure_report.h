// Failure reports: a rank whose context fails leaves a short note in the job's store saying
// which ranks the failure points at, so that the launcher (which hosts the store) can name the
// culprit instead of the first rank that happened to exit.
//
// Key: "gloo_lite/failure/<rank>", relative to the store given (gloo_lite_run reads it from its
// job store, the ranks' store under GLOO_LITE_PREFIX). Value, text:
//   GLFR1 <rank> <culprits> <message>
// where <culprits> is a comma list of decimal ranks, or "-" for none, and <message> is the rest
// of the value (at most kMaxFailureMessageBytes bytes, newlines kept). Example:
//   GLFR1 1 2 timeout in allreduce #17: rank 2 never sent
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"
#include "rendezvous/store.h"

namespace gloo_lite {

struct FailureReport {
  int rank = -1;
  std::vector<int> culprits;  // the ranks the failure points at (maybe none)
  std::string message;        // the error as the rank saw it
};

constexpr size_t kMaxFailureMessageBytes = 2048;

// The store key of `rank`'s report.
std::string failure_report_key(int rank);

// The value format above; longer messages are cut to kMaxFailureMessageBytes.
std::string encode_failure_report(const FailureReport& report);
// Parses a value; nullopt for anything that is not a well-formed report of a rank in 0..size-1
// naming ranks in 0..size-1 (a stranger's or a truncated value must not crash the reader).
std::optional<FailureReport> decode_failure_report(const std::string& value, int size);

// Publishes `rank`'s report. Best effort: never throws (a failing rank must go on failing with
// its own error), and does nothing once `deadline` has passed. The store's set() is bounded by
// the store's own operation deadline, not by `deadline`: keep the store healthy in mind when
// calling this from a failure path.
void publish_failure_report(Store& store, int rank, const std::vector<int>& culprits,
                            const std::string& message, Deadline deadline);

// The well-formed reports present in `store` for ranks 0..size-1, in rank order. Never waits for
// a report that is not there; never throws (a store error ends the reading with what was read).
std::vector<FailureReport> read_failure_reports(Store& store, int size, Deadline deadline);

}  // namespace gloo_lite
