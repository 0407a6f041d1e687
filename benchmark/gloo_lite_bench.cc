// gloo_lite_bench: collective bandwidth and latency in the conventions of nccl-tests.
//   gloo_lite_run -n 4 -- gloo_lite_bench -b 8 -e 64M -f 4 [--collective all] [-A all]
// For each collective and requested algorithm, one table: a row per size with the out-of-place
// and in-place time (max over ranks of the per-rank average), algbw, busbw and the number of
// wrong elements, then the algorithm the library ran. With --overlap MS the rows hold instead
// how much of the non-blocking call hides behind MS ms of computation (bench_overlap.h).
// bench_options.cc lists every flag.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bench_collective.h"
#include "bench_compute.h"
#include "bench_device.h"
#include "bench_json.h"
#include "bench_options.h"
#include "bench_overlap.h"
#include "bench_report.h"
#include "bench_sweep.h"
#include "gloo_lite/algorithm_choice.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/knobs.h"

#ifndef GLOO_LITE_BENCH_VERSION
#define GLOO_LITE_BENCH_VERSION "unknown"
#endif

namespace gloo_lite::bench {
namespace {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// Rank 0 prints every rank's pid and host, as nccl-tests lists its devices.
RunDescription describe_run(Context& context) {
  constexpr size_t kLine = 96;
  char mine[kLine] = {};
  std::snprintf(mine, sizeof(mine), "Pid %7d on %s", static_cast<int>(getpid()),
                host_name().c_str());
  std::vector<char> lines(kLine * context.size());
  allgather(context, mine, lines.data(), kLine, DataType::kUint8, control_options());
  RunDescription run;
  run.version = GLOO_LITE_BENCH_VERSION;
  run.transport = knob_string("GLOO_LITE_TRANSPORT");  // what -t (or the environment) chose
  const TuningInputs tuning = tuning_inputs(context);
  run.device = tuning.device;
  run.host = host_name();
  run.ranks = context.size();
  run.ranks_per_core = tuning.ranks_per_core;
  for (int rank = 0; rank < context.size(); ++rank) {
    const char* line = lines.data() + rank * kLine;
    run.rank_lines.emplace_back(line, strnlen(line, kLine));
  }
  return run;
}

// 12345678 as "12.3M": the calibrated loop's length in the run header.
std::string format_count(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3gM", value / 1e6);
  return text;
}

std::vector<const CollectiveInfo*> selected_collectives(const Options& options) {
  std::vector<const CollectiveInfo*> selected;
  for (const std::string& name : options.collectives) {
    if (name == "all") {
      for (const CollectiveInfo& info : all_collectives()) selected.push_back(&info);
    } else {
      selected.push_back(&find_collective(name));
    }
  }
  return selected;
}

// -A for one collective: "all" means auto and then every registered algorithm.
std::vector<std::string> selected_algorithms(const CollectiveInfo& info, const Options& options) {
  std::vector<std::string> selected;
  auto add = [&](const std::string& name) {
    if (std::find(selected.begin(), selected.end(), name) == selected.end()) {
      selected.push_back(name);
    }
  };
  for (const std::string& name : options.algorithms) {
    if (name != "all") {
      add(name);
      continue;
    }
    add("auto");
    for (const std::string& algorithm : algorithm_names(info.name)) add(algorithm);
  }
  return selected;
}

struct Sweep {
  Context& context;
  const Options& options;
  Buffers& buffers;
  JsonReport& json;
  bool progress;
  const Compute* compute;  // --overlap; null otherwise
  DeviceRun* device;       // -m cuda / host-stand-in; null for -m cpu
};

// One table. Returns the wrong elements found (over all ranks).
int64_t run_table(Sweep& sweep, const CollectiveInfo& info, const std::string& algorithm,
                  bool only_table) {
  Context& context = sweep.context;
  const Options& options = sweep.options;
  bool printer = context.rank() == 0;
  std::vector<uint64_t> sizes = sweep_sizes(options);
  if (info.kind == Kind::kBarrier) sizes = {0};
  // Names the library does not offer for this collective: an error when asked for this
  // collective alone, a note in a table of several.
  try {
    chosen_algorithm(context, info.name, 0, options.type, options.op, options.root, algorithm);
  } catch (const InvalidArgument& error) {
    if (only_table) throw;
    if (printer)
      std::printf("#\n# Skipping %s with %s: %s\n", info.name, algorithm.c_str(), error.what());
    return 0;
  }
  Table table(info, options);
  if (printer) table.print_header(algorithm);
  int64_t wrong = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Row row;
    row.info = &info;
    row.requested = algorithm;
    row.ranks = context.size();
    row.shape = shape_of(info, sizes[i], options.type, context.size());
    row.type = options.type;
    row.op = options.op;
    row.root = options.root;
    try {
      row.chosen = chosen_algorithm(context, info.name, row.shape.count, row.type, row.op, row.root,
                                    algorithm);
    } catch (const InvalidArgument&) {
      // An explicit algorithm with a size limit (direct allreduce's scratch): an N/A row.
      if (algorithm == "auto") throw;
      if (printer) table.print_unsupported(row);
      continue;
    }
    if (sweep.progress && printer) {
      std::fprintf(stderr, "gloo_lite_bench: %s %s %zu B (%zu/%zu)\n", info.name, algorithm.c_str(),
                   row.shape.bytes, i + 1, sizes.size());
    }
    Setup setup;
    setup.info = &info;
    setup.shape = row.shape;
    setup.type = row.type;
    setup.op = row.op;
    setup.root = row.root;
    setup.options.algorithm = algorithm;
    if (sweep.compute) {  // --overlap is for -m cpu only (bench_options.cc)
      setup.in_place = !info.out_of_place;
      CollectiveCall call(context, setup, sweep.buffers);
      row.overlap = measure_overlap(context, call, setup.in_place, *sweep.compute, options);
    } else {
      for (bool in_place : {false, true}) {
        if (!(in_place ? info.in_place : info.out_of_place)) continue;
        setup.in_place = in_place;
        Timing& timing = in_place ? row.in_place : row.out_of_place;
        if (sweep.device) {
          timing =
              measure(context, DeviceCall(context, setup, sweep.buffers, *sweep.device), options);
        } else {
          timing = measure(context, CollectiveCall(context, setup, sweep.buffers), options);
        }
      }
    }
    wrong += std::max<int64_t>(row.out_of_place.wrong, 0) +
             std::max<int64_t>(row.in_place.wrong, 0) + std::max<int64_t>(row.overlap.wrong, 0);
    if (printer) table.print_row(row);
    sweep.json.add(row);
  }
  if (printer) {
    table.print_footer();
    // After every table, so that an interrupted sweep keeps what it measured.
    if (!options.json_path.empty()) sweep.json.write(options.json_path);
  }
  return wrong;
}

int run(const Options& options) {
  // -t is GLOO_LITE_TRANSPORT for this process: init_from_env() creates the device from it.
  if (!options.transport.empty()) setenv("GLOO_LITE_TRANSPORT", options.transport.c_str(), 1);
  auto context = init_from_env();
  if (options.root >= context->size()) {
    throw InvalidArgument("-r " + std::to_string(options.root) +
                          ": the root must be a rank below " + std::to_string(context->size()));
  }
  std::vector<const CollectiveInfo*> collectives = selected_collectives(options);
  std::optional<DeviceRun> device;
  if (options.mode != Options::Mode::kCpu) {
    for (const CollectiveInfo* info : collectives) {
      if (!has_device_form(info->kind)) {
        throw InvalidArgument(std::string("-m ") + mode_name(options.mode) + ": " + info->name +
                              " has no device form; the device modes run allreduce, reduce, "
                              "reduce_scatter, allgather, broadcast and alltoall");
      }
    }
    device.emplace(*context, options);
  }
  RunDescription run = describe_run(*context);
  if (device) run.device_layer = device->describe();
  std::optional<Compute> compute;
  if (options.overlap_ms > 0) {
    // One rank at a time, while the others wait in the barrier: each loop is timed on a core
    // it does not share with another rank.
    for (int rank = 0; rank < context->size(); ++rank) {
      if (rank == context->rank()) compute.emplace(options.overlap_ms, options.overlap_idle);
      barrier(*context, control_options());
    }
    double steps = static_cast<double>(compute->steps());
    double fewest = -max_over_ranks(*context, -steps);
    double most = max_over_ranks(*context, steps);
    run.compute_steps = format_count(fewest) + ".." + format_count(most);
  }
  if (context->rank() == 0) print_run_header(run, options);
  if (options.copy_limit) {
    measure_copy_limit(*context, *device, options);
    barrier(*context, control_options());
    return 0;
  }
  // Allocated and touched once, for the largest size of every collective.
  Buffers buffers(options.max_bytes);
  JsonReport json;
  Sweep sweep{*context,
              options,
              buffers,
              json,
              isatty(STDERR_FILENO) || options.verbose,
              compute ? &*compute : nullptr,
              device ? &*device : nullptr};
  int64_t wrong = 0;
  size_t tables = 0;
  for (const CollectiveInfo* info : collectives)
    tables += selected_algorithms(*info, options).size();
  for (const CollectiveInfo* info : collectives) {
    for (const std::string& algorithm : selected_algorithms(*info, options)) {
      wrong += run_table(sweep, *info, algorithm, tables == 1);
    }
  }
  // Ranks that exit non-zero make launchers stop the rest: let rank 0 finish printing first.
  barrier(*context, control_options());
  return wrong > 0 ? 1 : 0;
}

}  // namespace
}  // namespace gloo_lite::bench

int main(int argc, char** argv) {
  gloo_lite::bench::Options options = gloo_lite::bench::parse_options(argc, argv);
  try {
    gloo_lite::validate_knobs();  // a bad GLOO_LITE_* value fails before any rank waits
    return gloo_lite::bench::run(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gloo_lite_bench: %s\n", error.what());
    return 1;
  }
}
