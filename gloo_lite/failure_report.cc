#include "gloo_lite/failure_report.h"

#include <cstdlib>

namespace gloo_lite {
namespace {

constexpr char kMagic[] = "GLFR1 ";
constexpr size_t kMagicBytes = sizeof(kMagic) - 1;

// A rank in 0..size-1 written as plain decimal digits (no sign, no blanks); nullopt otherwise.
std::optional<int> parse_rank(const std::string& text, int size) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  long value = std::strtol(text.c_str(), nullptr, 10);
  if (value >= size) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

std::string failure_report_key(int rank) { return "gloo_lite/failure/" + std::to_string(rank); }

std::string encode_failure_report(const FailureReport& report) {
  std::string culprits;
  for (int culprit : report.culprits) {
    culprits += (culprits.empty() ? "" : ",") + std::to_string(culprit);
  }
  if (culprits.empty()) culprits = "-";
  return kMagic + std::to_string(report.rank) + " " + culprits + " " +
         report.message.substr(0, kMaxFailureMessageBytes);
}

std::optional<FailureReport> decode_failure_report(const std::string& value, int size) {
  if (value.compare(0, kMagicBytes, kMagic) != 0) return std::nullopt;
  size_t rank_end = value.find(' ', kMagicBytes);
  if (rank_end == std::string::npos) return std::nullopt;
  size_t culprits_end = value.find(' ', rank_end + 1);
  if (culprits_end == std::string::npos) return std::nullopt;
  FailureReport report;
  auto rank = parse_rank(value.substr(kMagicBytes, rank_end - kMagicBytes), size);
  if (!rank) return std::nullopt;
  report.rank = *rank;
  std::string culprits = value.substr(rank_end + 1, culprits_end - rank_end - 1);
  if (culprits != "-") {
    size_t start = 0;
    while (start <= culprits.size()) {
      size_t comma = culprits.find(',', start);
      if (comma == std::string::npos) comma = culprits.size();
      auto culprit = parse_rank(culprits.substr(start, comma - start), size);
      if (!culprit || report.culprits.size() >= static_cast<size_t>(size)) return std::nullopt;
      report.culprits.push_back(*culprit);
      start = comma + 1;
    }
  }
  report.message = value.substr(culprits_end + 1, kMaxFailureMessageBytes);
  return report;
}

void publish_failure_report(Store& store, int rank, const std::vector<int>& culprits,
                            const std::string& message, Deadline deadline) {
  if (deadline.expired()) return;
  try {
    store.set(failure_report_key(rank), to_bytes(encode_failure_report({rank, culprits, message})),
              deadline);
  } catch (...) {
    // Best effort by contract: the caller is already failing with its own error.
  }
}

std::vector<FailureReport> read_failure_reports(Store& store, int size, Deadline deadline) {
  std::vector<FailureReport> reports;
  try {
    for (int rank = 0; rank < size && !deadline.expired(); ++rank) {
      std::string key = failure_report_key(rank);
      if (!store.check({key})) continue;
      auto report = decode_failure_report(to_string(store.get(key, deadline)), size);
      // A report stored under another rank's key is not believed.
      if (report && report->rank == rank) reports.push_back(std::move(*report));
    }
  } catch (...) {
    // A store that fails now leaves the launcher with what it has read.
  }
  return reports;
}

}  // namespace gloo_lite
