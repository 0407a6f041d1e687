#include "gloo_lite/hang_report.h"

#include <algorithm>
#include <sstream>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite {
namespace {

// Per tag: independent streams of one rank may time out at once.
std::string report_key(const ContextEngine& context, uint16_t tag, int rank) {
  return context.store_key("hang/" + std::to_string(tag) + "/" + std::to_string(rank));
}

struct Report {
  uint16_t tag = 0;
  uint64_t sequence = 0;
  std::string what;
};

bool parse_report(const std::string& text, Report* report) {
  std::istringstream in(text);
  unsigned tag = 0;
  if (!(in >> tag >> report->sequence) || tag > 0xffff) return false;
  report->tag = static_cast<uint16_t>(tag);
  std::getline(in >> std::ws, report->what);
  return true;
}

// One round of the poll: reads the reports of the peers not `seen` yet that are in the store,
// sorts them into `verdict` (this call, or another one) and returns how many it read.
int read_new_reports(ContextEngine& context, uint16_t tag, uint64_t sequence,
                     const Deadline& store_deadline, std::vector<bool>& seen,
                     HangVerdict& verdict) {
  Store& store = *context.store();
  int read = 0;
  for (int peer = 0; peer < context.size(); ++peer) {
    if (seen[peer] || !store.check({report_key(context, tag, peer)}, store_deadline)) continue;
    Report report;
    std::string text = to_string(store.get(report_key(context, tag, peer), store_deadline));
    // Seen once read: a peer whose read fails in the last round counts as absent.
    seen[peer] = true;
    ++read;
    if (!parse_report(text, &report)) continue;
    if (report.tag == tag && report.sequence == sequence) {
      verdict.same_call.push_back(peer);
    } else {
      verdict.elsewhere_ranks.push_back(peer);
      verdict.elsewhere.push_back("rank " + std::to_string(peer) + " timed out in " + report.what +
                                  " instead");
    }
  }
  return read;
}

}  // namespace

std::string rank_list(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  // Runs of three or more consecutive ranks as one piece ("1–9"); the others alone.
  std::vector<std::string> pieces;
  std::vector<size_t> piece_ranks;
  for (size_t first = 0; first < ranks.size();) {
    size_t last = first;
    while (last + 1 < ranks.size() && ranks[last + 1] == ranks[last] + 1) ++last;
    if (last - first >= 2) {
      pieces.push_back(std::to_string(ranks[first]) + "–" + std::to_string(ranks[last]));
      piece_ranks.push_back(last - first + 1);
      first = last + 1;
    } else {
      pieces.push_back(std::to_string(ranks[first]));
      piece_ranks.push_back(1);
      ++first;
    }
  }
  // At most kShown pieces: a message about 10^5 ranks stays a line, not 100 KB.
  constexpr size_t kShown = 8;
  std::string out;
  const size_t shown = std::min(pieces.size(), kShown);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += i + 1 == pieces.size() ? " and " : ", ";
    out += pieces[i];
  }
  if (shown < pieces.size()) {
    size_t more = 0;
    for (size_t i = shown; i < pieces.size(); ++i) more += piece_ranks[i];
    out += " and " + std::to_string(more) + " more";
  }
  return out;
}

std::vector<int> HangVerdict::culprits() const { return absent.empty() ? elsewhere_ranks : absent; }

std::string HangVerdict::text() const {
  if (store_failed) return "the store could not be reached to find the ranks that never arrived";
  std::string out;
  if (!absent.empty()) {
    out = std::string(absent.size() == 1 ? "rank " : "ranks ") + rank_list(absent) +
          " never arrived (no report within the grace period: stopped, hung, crashed, or busy "
          "outside gloo_lite)";
  }
  for (const std::string& other : elsewhere) out += (out.empty() ? "" : "; ") + other;
  if (!same_call.empty()) {
    out += (out.empty() ? "" : "; ") + std::string(same_call.size() == 1 ? "rank " : "ranks ") +
           rank_list(same_call) + " timed out in this call";
  }
  return out;
}

std::chrono::milliseconds hang_report_grace(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(200), std::chrono::milliseconds(2000));
}

HangVerdict exchange_hang_reports(ContextEngine& context, uint16_t tag, uint64_t sequence,
                                  const std::string& what, std::chrono::milliseconds grace,
                                  Deadline end) {
  HangVerdict verdict;
  Store& store = *context.store();
  // Store calls get their own bound, `end`; the polling stops a quarter of the time to `end`
  // before it, so that its last round of reads has that long to finish. (Polling until `end`
  // itself ran the last round on an expired bound whenever the grace period reached past it,
  // as it does from a 2 s timeout up: the store "could not be reached", 7 times in 10.)
  const Deadline store_deadline = end;
  Deadline deadline = Deadline::after(grace);
  if (!end.is_never()) {
    deadline = deadline.earlier(Deadline::after(end.remaining() - end.remaining() / 4));
  }
  auto store_failed = [] {
    HangVerdict failed;
    failed.store_failed = true;
    return failed;
  };
  bool last_round = false;  // this rank's report is in and the grace period is over
  std::vector<bool> seen(context.size(), false);
  seen[context.rank()] = true;
  verdict.same_call.push_back(context.rank());
  try {
    store.set(report_key(context, tag, context.rank()),
              to_bytes(std::to_string(tag) + " " + std::to_string(sequence) + " " + what),
              store_deadline);
    int missing = context.size() - 1;
    // Poll: a rank that never arrives writes nothing, so waiting for all keys would always take
    // the whole grace period; polling lets the common case (all present) end early.
    Backoff backoff(std::chrono::milliseconds(5), std::chrono::milliseconds(50));
    while (missing > 0) {
      last_round = deadline.expired();
      missing -= read_new_reports(context, tag, sequence, store_deadline, seen, verdict);
      if (missing == 0 || deadline.expired()) break;
      backoff.sleep(deadline);
    }
  } catch (const std::exception&) {
    // The last round, begun once the grace period was over, failing by `end` (a descheduled
    // rank, a slow store) costs only what it had not read yet: those ranks count as absent.
    // A store that took no report, or failed earlier, could not be reached.
    if (!last_round) return store_failed();
  }
  for (int peer = 0; peer < context.size(); ++peer) {
    if (!seen[peer]) verdict.absent.push_back(peer);
  }
  std::sort(verdict.same_call.begin(), verdict.same_call.end());
  return verdict;
}

}  // namespace gloo_lite
