#include "tools/launcher_blame.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace gloo_lite::launcher {
namespace {

int state_priority(char state) {
  switch (state) {
    case 'T':
    case 't':
      return 3;
    case 'D':
      return 2;
    case 0:
      return 0;
    default:
      return 1;
  }
}

std::string state_text(char state) {
  switch (state) {
    case 'T':
      return "stopped (process state T: SIGSTOP?)";
    case 't':
      return "stopped by a debugger (process state t)";
    case 'D':
      return "stuck in the kernel (process state D: disk, NFS?)";
    default:
      return std::string("in process state ") + state;
  }
}

std::string rank_list(const std::set<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return (ranks.size() == 1 ? "rank " : "ranks ") + text;
}

// Reads /proc/<pid>/stat: the state and the process group; false when the process is gone.
// The command name (field 2) may hold blanks and parentheses, so parse after the last ')'.
bool read_stat(const std::string& pid, char* state, long* group) {
  std::ifstream file("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(file, line)) return false;
  size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 1));
  long parent = 0;
  return static_cast<bool>(fields >> *state >> parent >> *group);
}

}  // namespace

std::map<pid_t, char> process_group_states() {
  std::map<pid_t, char> worst;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return worst;
  while (dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    char state = 0;
    long group = 0;
    if (!read_stat(entry->d_name, &state, &group)) continue;
    char& seen = worst[static_cast<pid_t>(group)];
    if (state_priority(state) > state_priority(seen)) seen = state;
  }
  closedir(proc);
  return worst;
}

char process_group_state(pid_t group) {
  std::map<pid_t, char> states = process_group_states();
  auto found = states.find(group);
  return found == states.end() ? 0 : found->second;
}

bool state_is_suspect(char state) { return state_priority(state) >= 2; }

std::string blame_clause(int first_failed, const BlameEvidence& evidence) {
  // Who the reports point at, and which ranks point at each.
  std::map<int, std::set<int>> named_by;
  std::set<int> reporting;
  for (const auto& report : evidence.reports) {
    reporting.insert(report.rank);
    for (int culprit : report.culprits) named_by[culprit].insert(report.rank);
  }
  // A stopped rank that reported a failure of its own, or exited with one, was failing, not
  // stuck: caught between its error and its exit (a sanitizer's leak check at exit, for one,
  // shows as a traced stop, 't').
  std::set<int> failing(reporting);
  failing.insert(evidence.failed.begin(), evidence.failed.end());
  if (first_failed >= 0) failing.insert(first_failed);
  std::set<int> culprits;
  for (const auto& suspect : evidence.suspects) {
    if (failing.count(suspect.rank) == 0) culprits.insert(suspect.rank);
  }
  if (culprits.empty()) {
    size_t most = 0;
    for (const auto& [rank, by] : named_by) most = std::max(most, by.size());
    for (const auto& [rank, by] : named_by) {
      if (by.size() == most) culprits.insert(rank);
    }
  }
  if (culprits.empty()) return "";

  std::string clause = culprits.size() == 1 ? "likely culprit: " : "likely culprits: ";
  bool first = true;
  for (int culprit : culprits) {
    clause += first ? "" : "; ";
    first = false;
    clause += "rank " + std::to_string(culprit);
    for (const auto& suspect : evidence.suspects) {
      if (suspect.rank == culprit) {
        clause += ", " + state_text(suspect.state) +
                  (first_failed >= 0 ? " when rank " + std::to_string(first_failed) + " failed"
                                     : " when the job was stopped");
      }
    }
    auto by = named_by.find(culprit);
    if (by != named_by.end()) {
      clause += std::string(", named by the failure report") + (by->second.size() == 1 ? "" : "s") +
                " of " + rank_list(by->second);
    }
  }
  std::set<int> waited = reporting;
  waited.insert(evidence.failed.begin(), evidence.failed.end());
  if (first_failed >= 0) waited.insert(first_failed);
  for (int culprit : culprits) waited.erase(culprit);
  if (!waited.empty()) {
    clause +=
        "; " + rank_list(waited) + " failed waiting for " + (culprits.size() == 1 ? "it" : "them");
  }
  return clause;
}

}  // namespace gloo_lite::launcher
