#include "bench_report.h"

#include <cstdio>

namespace gloo_lite::bench {
namespace {

// Column widths, shared by the headings and the rows.
constexpr const char* kPrefix = "%12s  %12s  %8s  %6s  %6s";
constexpr const char* kPrefixHeading = "#%11s  %12s  %8s  %6s  %6s";  // the same, after a '#'
constexpr const char* kForm = "  %8s  %7s  %7s  %6s";
constexpr const char* kPercentiles = "  %8s  %8s";
constexpr const char* kOverlapForm = "  %2s  %9s  %9s  %9s  %7s  %6s";

std::string format(const char* pattern, double value) {
  char text[32];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

// Microseconds with the precision nccl-tests gives them.
std::string format_time(double us) {
  return format(us >= 10000 ? "%.0f" : us >= 100 ? "%.1f" : "%.2f", us);
}

std::string centered(const std::string& text, size_t width) {
  size_t left = text.size() < width ? (width - text.size()) / 2 : 0;
  std::string line(left, ' ');
  line += text;
  if (line.size() < width) line.append(width - line.size(), ' ');
  return line;
}

}  // namespace

void print_run_header(const RunDescription& run, const Options& options) {
  std::printf("# gloo_lite_bench: gloo_lite %s, nccl-tests conventions (GB = 1e9 B)\n",
              run.version.c_str());
  std::printf("#  transport %s (%s)  P %d  host %s  ranks per core %.2f\n", run.transport.c_str(),
              run.device.c_str(), run.ranks, run.host.c_str(), run.ranks_per_core);
  std::string iterations =
      options.iterations > 0
          ? std::to_string(options.iterations)
          : "auto (>= 5, ~" + format("%.2f", options.seconds_per_size) + " s per size and form)";
  std::string step = options.step_bytes > 0 ? std::to_string(options.step_bytes) + "(bytes)"
                                            : std::to_string(options.factor) + "(factor)";
  std::printf("#  minBytes %llu maxBytes %llu step: %s warmup iters: %d iters: %s validation: %d\n",
              static_cast<unsigned long long>(options.min_bytes),
              static_cast<unsigned long long>(options.max_bytes), step.c_str(), options.warmup,
              iterations.c_str(), options.check ? 1 : 0);
  std::string algorithms;
  for (const std::string& name : options.algorithms) {
    algorithms += (algorithms.empty() ? "" : ",") + name;
  }
  std::string collectives;
  for (const std::string& name : options.collectives) {
    collectives += (collectives.empty() ? "" : ",") + name;
  }
  std::printf("#  collective %s  algorithm %s  type %s  op %s  root %d\n", collectives.c_str(),
              algorithms.c_str(), type_name(options.type), op_name(options.op), options.root);
  if (options.overlap_ms > 0 && options.overlap_idle) {
    std::printf(
        "#  overlap: %.3g ms of idle waiting per call (a sleep: the caller waits for an "
        "accelerator or I/O, --overlap-idle)\n",
        options.overlap_ms);
  } else if (options.overlap_ms > 0) {
    std::printf(
        "#  overlap: %.3g ms of computation per call (a multiply-add chain calibrated on each "
        "rank: %s steps)\n",
        options.overlap_ms, run.compute_steps.c_str());
  }
  if (!run.device_layer.empty()) {
    // The device modes time the blocking form (enqueue, then wait for the stream), as a
    // caller that needs the result on the host would see it.
    std::printf("#  mode %s: device buffers through gloo_lite::cuda on %s; blocking calls\n",
                mode_name(options.mode), run.device_layer.c_str());
  }
  std::printf("#\n# Using ranks\n");
  for (size_t rank = 0; rank < run.rank_lines.size(); ++rank) {
    std::printf("#  Rank %2zu %s\n", rank, run.rank_lines[rank].c_str());
  }
  std::fflush(stdout);
}

Table::Table(const CollectiveInfo& info, const Options& options)
    : info_(info),
      overlap_ms_(options.overlap_ms),
      per_iteration_(options.per_iteration),
      check_(options.check) {}

void Table::print_overlap_header(const std::string& algorithm) const {
  std::printf(
      "#\n# Collective %s, algorithm %s, overlap with %.3g ms of computation (the last "
      "column: what the library ran)\n",
      info_.name, algorithm.c_str(), overlap_ms_);
  std::printf(
      "#  comm: the blocking call; comp: the computation alone; total: the non-blocking call "
      "started,\n#  the computation, wait; overlap = (comm + comp - total) / min(comm, comp); "
      "ip: in place\n");
  std::printf(kPrefixHeading, "size", "count", "type", "redop", "root");
  std::printf(kOverlapForm, "ip", "comm", "comp", "total", "overlap", "#wrong");
  std::printf("  algo\n");
  std::printf(kPrefixHeading, "(B)", "(elements)", "", "", "");
  std::printf(kOverlapForm, "", "(us)", "(us)", "(us)", "", "");
  std::printf("\n");
}

void Table::print_overlap(const OverlapTiming& timing) {
  if (!timing.measured) {
    std::printf(kOverlapForm, "N/A", "N/A", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  overlap_sum_ += timing.overlap;
  ++overlap_count_;
  if (timing.wrong > 0) wrong_ += timing.wrong;
  std::string wrong = timing.wrong >= 0 ? std::to_string(timing.wrong) : "N/A";
  std::printf(kOverlapForm, timing.in_place ? "1" : "0", format_time(timing.comm_us).c_str(),
              format_time(timing.comp_us).c_str(), format_time(timing.total_us).c_str(),
              format("%.2f", timing.overlap).c_str(), wrong.c_str());
}

void Table::print_header(const std::string& algorithm) const {
  if (overlap_ms_ > 0) {
    print_overlap_header(algorithm);
    std::fflush(stdout);
    return;
  }
  std::string form_format = std::string(kForm) + (per_iteration_ ? kPercentiles : "");
  char prefix[128];
  char form[128];
  std::snprintf(form, sizeof(form), form_format.c_str(), "", "", "", "", "", "");
  size_t form_width = std::string(form).size();
  std::snprintf(prefix, sizeof(prefix), kPrefixHeading, "", "", "", "", "");
  std::printf("#\n# Collective %s, algorithm %s (the last column: what the library ran)\n",
              info_.name, algorithm.c_str());
  std::printf("%s%s%s\n", prefix, centered("out-of-place", form_width).c_str(),
              centered("in-place", form_width).c_str());
  std::printf(kPrefixHeading, "size", "count", "type", "redop", "root");
  for (int i = 0; i < 2; ++i) {
    std::printf(form_format.c_str(), "time", "algbw", "busbw", "#wrong", "p50", "p99");
  }
  std::printf("  algo\n");
  std::printf(kPrefixHeading, "(B)", "(elements)", "", "", "");
  for (int i = 0; i < 2; ++i) {
    std::printf(form_format.c_str(), "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");
  }
  std::printf("\n");
  std::fflush(stdout);
}

void Table::print_form(const Row& row, const Timing& timing) {
  if (!timing.measured) {
    std::printf(kForm, "N/A", "N/A", "N/A", "N/A");
    if (per_iteration_) std::printf(kPercentiles, "N/A", "N/A");
    return;
  }
  double busbw = busbw_gbps(row, timing);
  if (info_.kind != Kind::kBarrier) {
    busbw_sum_ += busbw;
    ++busbw_count_;
  }
  if (timing.wrong > 0) wrong_ += timing.wrong;
  std::string wrong = timing.wrong >= 0 ? std::to_string(timing.wrong) : "N/A";
  std::printf(kForm, format_time(timing.time_us).c_str(),
              format("%.3f", algbw_gbps(row, timing)).c_str(), format("%.3f", busbw).c_str(),
              wrong.c_str());
  if (per_iteration_) {
    std::printf(kPercentiles, format_time(timing.p50_us).c_str(),
                format_time(timing.p99_us).c_str());
  }
}

void Table::print_unsupported(const Row& row) {
  Row unmeasured = row;
  unmeasured.out_of_place = Timing{};
  unmeasured.in_place = Timing{};
  unmeasured.overlap = OverlapTiming{};
  unmeasured.chosen = "unsupported";
  print_row(unmeasured);
}

void Table::print_row(const Row& row) {
  bool barrier = info_.kind == Kind::kBarrier;
  std::printf(kPrefix, std::to_string(row.shape.bytes).c_str(),
              std::to_string(row.shape.elements).c_str(), barrier ? "none" : type_name(row.type),
              info_.reduces ? op_name(row.op) : "none",
              std::to_string(info_.rooted ? row.root : -1).c_str());
  if (overlap_ms_ > 0) {
    print_overlap(row.overlap);
  } else {
    print_form(row, row.out_of_place);
    print_form(row, row.in_place);
  }
  std::printf("  %s\n", row.chosen.c_str());
  std::fflush(stdout);
}

void Table::print_footer() const {
  if (check_) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong_),
                wrong_ == 0 ? "OK" : "FAILED");
  } else {
    std::printf("# Out of bounds values : not checked (-c 0)\n");
  }
  if (overlap_ms_ > 0) {
    if (overlap_count_ > 0) {
      std::printf("# Avg overlap          : %.4f \n", overlap_sum_ / overlap_count_);
    } else {
      std::printf("# Avg overlap          : N/A (nothing measured)\n");
    }
  } else if (busbw_count_ > 0) {
    std::printf("# Avg bus bandwidth    : %.4f \n", busbw_sum_ / busbw_count_);
  } else {
    std::printf("# Avg bus bandwidth    : N/A (%s)\n",
                info_.kind == Kind::kBarrier ? "barrier moves no data" : "nothing measured");
  }
  std::fflush(stdout);
}

}  // namespace gloo_lite::bench
