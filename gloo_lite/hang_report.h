// From hang to culprit. When a collective times out, the rank cannot see why from its own
// sockets: it knows only the peers it was waiting for, which may themselves be waiting for the
// rank that is really stuck. So every rank whose collective times out writes a short report
// ("I am in allreduce #57 on tag 0") to the store and reads the others' for a grace period;
// since the ranks of a stuck collective time out within a moment of each other, the ranks that
// wrote nothing are the ones that never arrived (stopped, hung, or busy outside gloo_lite), and
// those that report another call are behind. Costs nothing until a timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gloo_lite/context_engine.h"

namespace gloo_lite {

struct HangVerdict {
  std::vector<int> same_call;          // timed out in this very call (this rank included)
  std::vector<int> absent;             // wrote no report within the grace period
  std::vector<std::string> elsewhere;  // "rank 3 is in broadcast #56 on tag 0"
  std::vector<int> elsewhere_ranks;
  bool store_failed = false;  // the store could not be used; the verdict is empty
  // The ranks the hang points at: absent ones, else those in another call.
  std::vector<int> culprits() const;
  // "rank 2 never arrived (...); ranks 0, 1, 3 timed out in the same call"
  std::string text() const;
};

// The grace period for a context whose timeout is `timeout`: a tenth of it, within
// [200 ms, 2 s].
std::chrono::milliseconds hang_report_grace(std::chrono::milliseconds timeout);

// Writes this rank's report for (tag, sequence, what) and collects the others' until every
// rank reported or `grace` passed. No store call runs past `end` (a store this rank cannot
// reach any more must not hold its error back): then the verdict is store_failed.
HangVerdict exchange_hang_reports(ContextEngine& context, uint16_t tag, uint64_t sequence,
                                  const std::string& what, std::chrono::milliseconds grace,
                                  Deadline end);

// The one way messages list ranks: "2", "0, 1 and 3", "1–99999" (runs of three or more
// compressed), sorted, at most 8 pieces then "and N more" ("0, 2, 4, ... and 49995 more").
std::string rank_list(std::vector<int> ranks);

}  // namespace gloo_lite
