// Who the launcher blames when a job fails. The first rank to exit is often only the first to
// notice: with rank 2 stopped, ranks 1 and 3 time out waiting for it. Two sources name the
// rank behind it: the state of the other ranks' processes when the first one fails (stopped,
// stuck in the kernel), and the failure reports the ranks leave in the job's store
// (gloo_lite/failure_report.h).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "gloo_lite/failure_report.h"

namespace gloo_lite::launcher {

// The most telling state of the processes in process group `group` (a rank and what it
// started), from /proc/<pid>/stat: 'T' (stopped) or 't' (stopped by a debugger) before 'D'
// (uninterruptible sleep) before anything else; 0 when no process of the group is found.
char process_group_state(pid_t group);
// The same for every process group at once (one pass over /proc, however many ranks).
std::map<pid_t, char> process_group_states();

// Whether a rank in `state` cannot take part in a collective: stopped, traced or stuck in D.
bool state_is_suspect(char state);

struct SuspectRank {
  int rank;
  char state;  // as process_group_state returned it
};

struct BlameEvidence {
  std::vector<SuspectRank> suspects;   // other ranks found stopped or stuck at the first failure
  std::vector<FailureReport> reports;  // from the job's store, after the job ended
  std::vector<int> failed;  // ranks that exited with a failure status, not by a launcher signal
};

// The clause the launcher's summary adds after the first failing rank, e.g.
//   "likely culprit: rank 2, stopped (process state T: SIGSTOP?) when rank 1 failed, named by
//    the failure reports of ranks 1, 3; ranks 1, 3 failed waiting for it"
// (one line); `first_failed` -1 when no rank failed (the job ran out of time). Process states win
// over reports; reports alone name the ranks most of them point at. "" when neither source names
// anyone.
std::string blame_clause(int first_failed, const BlameEvidence& evidence);

}  // namespace gloo_lite::launcher
