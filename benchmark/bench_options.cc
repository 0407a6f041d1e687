#include "bench_options.h"

#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/collective_info.h"

namespace gloo_lite::bench {
namespace {

constexpr const char* kUsage = R"(usage: gloo_lite_run -n P -- gloo_lite_bench [options]
  -b, --minbytes SIZE      smallest message in bytes, K/M/G suffixes (default 8)
  -e, --maxbytes SIZE      largest message (default 64M)
  -f, --stepfactor N       multiply the size by N between rows (default 2)
  -i, --stepbytes SIZE     add SIZE between rows instead of multiplying
  -n, --iters N            timed iterations per size (default: auto, ~0.3 s per size, >= 5)
      --size-time SECONDS  time per size that the automatic -n aims at (default 0.3)
  -w, --warmup_iters N     warm-up iterations per size (default 5)
  -c, --check 0/1          verify every output element after the warm-up (default 1)
  -o, --op NAME            sum, prod, min, max, avg; band, bor, bxor with an integer -d
                           (default sum)
  -d, --datatype NAME      float, half, bf16, double, int8, uint8, int32, ... (default float)
  -r, --root N             root of reduce, gather, scatter, broadcast (default 0)
  -A, --algorithm NAME     auto (the tuner), an algorithm name, a comma list, or all
                           (auto, then every algorithm of the collective) (default auto)
      --collective NAME    allreduce (default), reduce, reduce_scatter, allgather, gather,
                           scatter, broadcast, alltoall, barrier, a comma list, or all
      --json FILE          also write every row as JSON (rank 0)
  -I, --per-iteration      time every iteration and print its p50 and p99 (max over ranks)
  -t, --transport NAME     tcp, shm, or ibverbs (when built with libibverbs); sets
                           GLOO_LITE_TRANSPORT for this run (default: GLOO_LITE_TRANSPORT,
                           else the library's choice per pair: shm on one host)
      --overlap MS         instead of the bandwidth tables: per size, the blocking call's
                           time, MS ms of CPU-bound computation alone, and the non-blocking
                           call started before the computation and waited for after it, with
                           overlap = (comm + comp - total) / min(comm, comp): 1 = fully hidden,
                           0 = none (default sizes with --overlap: -b 16M -e 16M)
      --overlap-idle       with --overlap: the computation sleeps MS ms instead, as a caller
                           waiting for an accelerator or I/O would (no CPU taken from the
                           library: what overlap a machine without a spare core can reach)
  -m, --mode MODE          cpu (host buffers, the CPU collectives; default), cuda (device
                           buffers on GPU 0 through gloo_lite::cuda's staging pipeline), or
                           host-stand-in (the same device path on the host stand-in layer,
                           no GPU: for smoke tests); the device modes run allreduce, reduce,
                           reduce_scatter, allgather, broadcast and alltoall
      --copy-limit         with -m cuda or host-stand-in: instead of the collectives, the
                           pinned device-to-host and host-to-device copy bandwidth per size,
                           every rank copying at once (the staging pipeline's limit)
      --slot-bytes SIZE    device modes: bytes per pinned staging slot (default 4M)
      --slots N            device modes: staging slots (default 4, at least 2)
  -v, --verbose            progress on stderr even when it is not a terminal
  -h, --help               this text
Sizes are bytes per rank buffer as in nccl-tests: for reduce_scatter, allgather, gather, scatter
and alltoall the size is the whole (P-block) buffer. GB = 1e9 bytes.
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "gloo_lite_bench: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

int64_t parse_int(const char* text, const char* flag, int64_t minimum) {
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < minimum) {
    usage_error(std::string(flag) + " wants an integer >= " + std::to_string(minimum) + ", got '" +
                text + "'");
  }
  return value;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

enum LongOnly {
  kCollective = 1000,
  kJson,
  kSizeTime,
  kOverlap,
  kOverlapIdle,
  kCopyLimit,
  kSlotBytes,
  kSlots
};

const option kLongOptions[] = {
    {"minbytes", required_argument, nullptr, 'b'},
    {"maxbytes", required_argument, nullptr, 'e'},
    {"stepfactor", required_argument, nullptr, 'f'},
    {"stepbytes", required_argument, nullptr, 'i'},
    {"iters", required_argument, nullptr, 'n'},
    {"warmup_iters", required_argument, nullptr, 'w'},
    {"check", required_argument, nullptr, 'c'},
    {"op", required_argument, nullptr, 'o'},
    {"datatype", required_argument, nullptr, 'd'},
    {"root", required_argument, nullptr, 'r'},
    {"algorithm", required_argument, nullptr, 'A'},
    {"transport", required_argument, nullptr, 't'},
    {"per-iteration", no_argument, nullptr, 'I'},
    {"verbose", no_argument, nullptr, 'v'},
    {"help", no_argument, nullptr, 'h'},
    {"collective", required_argument, nullptr, kCollective},
    {"json", required_argument, nullptr, kJson},
    {"size-time", required_argument, nullptr, kSizeTime},
    {"overlap", required_argument, nullptr, kOverlap},
    {"overlap-idle", no_argument, nullptr, kOverlapIdle},
    {"mode", required_argument, nullptr, 'm'},
    {"copy-limit", no_argument, nullptr, kCopyLimit},
    {"slot-bytes", required_argument, nullptr, kSlotBytes},
    {"slots", required_argument, nullptr, kSlots},
    {nullptr, 0, nullptr, 0},
};

void apply(Options& options, int flag, const char* value, const char* word) {
  switch (flag) {
    case 'b':
      options.min_bytes = parse_bytes(value, "-b");
      break;
    case 'e':
      options.max_bytes = parse_bytes(value, "-e");
      break;
    case 'f':
      options.factor = parse_int(value, "-f", 2);
      break;
    case 'i':
      options.step_bytes = parse_bytes(value, "-i");
      break;
    case 'n':
      options.iterations = static_cast<int>(parse_int(value, "-n", 1));
      break;
    case 'w':
      options.warmup = static_cast<int>(parse_int(value, "-w", 0));
      break;
    case 'c':
      // nccl-tests' -c (check); the collective is --collective. Say so to whoever mixes them.
      if (find_collective(value) != nullptr) {
        usage_error(std::string("-c is the check (0 or 1), as in nccl-tests; for the collective ") +
                    "say --collective " + value);
      }
      options.check = parse_int(value, "-c", 0) != 0;
      break;
    case 'o':
      options.op = parse_op(value);
      if (options.op == ReduceOp::kCustom) usage_error("-o custom needs a program, not a flag");
      break;
    case 'd':
      options.type = parse_type(value);
      break;
    case 'r':
      options.root = static_cast<int>(parse_int(value, "-r", 0));
      break;
    case 'A':
      options.algorithms = split_list(value);
      break;
    case 't':
      options.transport = value;
      if (options.transport != "tcp" && options.transport != "shm" &&
          options.transport != "ibverbs") {
        usage_error("-t wants tcp, shm or ibverbs, got '" + options.transport + "'");
      }
      break;
    case 'I':
      options.per_iteration = true;
      break;
    case 'v':
      options.verbose = true;
      break;
    case kCollective:
      options.collectives = split_list(value);
      break;
    case kJson:
      options.json_path = value;
      break;
    case kSizeTime:
      options.seconds_per_size = std::strtod(value, nullptr);
      if (!(options.seconds_per_size > 0)) usage_error("--size-time wants seconds > 0");
      break;
    case kOverlap: {
      char* end = nullptr;
      options.overlap_ms = std::strtod(value, &end);
      if (end == value || *end != '\0' || !(options.overlap_ms > 0)) {
        usage_error(std::string("--overlap wants milliseconds > 0, got '") + value + "'");
      }
      break;
    }
    case kOverlapIdle:
      options.overlap_idle = true;
      break;
    case 'm': {
      std::string mode = value;
      if (mode == "cpu") {
        options.mode = Options::Mode::kCpu;
      } else if (mode == "cuda") {
        options.mode = Options::Mode::kCuda;
      } else if (mode == "host-stand-in") {
        options.mode = Options::Mode::kHostStandIn;
      } else {
        usage_error("-m wants cpu, cuda or host-stand-in, got '" + mode + "'");
      }
      break;
    }
    case kCopyLimit:
      options.copy_limit = true;
      break;
    case kSlotBytes:
      options.slot_bytes = parse_bytes(value, "--slot-bytes");
      if (options.slot_bytes == 0) usage_error("--slot-bytes wants a size > 0");
      break;
    case kSlots:
      options.slots = static_cast<int>(parse_int(value, "--slots", 2));
      break;
    case 'h':
      std::fputs(kUsage, stdout);
      std::exit(0);
    default:
      usage_error(std::string("unknown option or missing value: ") + word);
  }
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  opterr = 0;  // usage_error says what was wrong
  bool sizes_given = false;
  int flag;
  while ((flag = getopt_long(argc, argv, "b:e:f:i:n:w:c:o:d:r:A:t:m:Ivh", kLongOptions, nullptr)) !=
         -1) {
    sizes_given = sizes_given || flag == 'b' || flag == 'e';
    try {
      apply(options, flag, optarg, argv[std::min(optind, argc) - 1]);
    } catch (const Error& error) {  // parse_bytes, parse_type, parse_op
      usage_error(error.what());
    }
  }
  if (optind < argc) usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (options.overlap_ms > 0) {
    // 16 MiB: large enough that the transfer takes milliseconds at every P, as issue 10 asks.
    if (!sizes_given) options.min_bytes = options.max_bytes = 16ull << 20;
    if (options.per_iteration) usage_error("-I does not apply to --overlap");
  } else if (options.overlap_idle) {
    usage_error("--overlap-idle goes with --overlap MS");
  }
  if (is_bitwise(options.op) && !is_integer(options.type)) {
    usage_error(std::string("-o ") + op_name(options.op) +
                " is a bitwise op: it needs an integer " +
                "-d (int8, uint8, int32, uint32, int64, uint64), not " + type_name(options.type));
  }
  if (options.min_bytes > options.max_bytes) usage_error("-b is larger than -e");
  if (options.mode != Options::Mode::kCpu && options.overlap_ms > 0) {
    usage_error("--overlap is for -m cpu (the device calls are timed blocking)");
  }
  if (options.copy_limit && options.mode == Options::Mode::kCpu) {
    usage_error("--copy-limit measures a device layer: add -m cuda or -m host-stand-in");
  }
  if (options.algorithms.empty()) options.algorithms = {"auto"};
  if (options.collectives.empty()) options.collectives = {"allreduce"};
  return options;
}

const char* mode_name(Options::Mode mode) {
  switch (mode) {
    case Options::Mode::kCpu:
      return "cpu";
    case Options::Mode::kCuda:
      return "cuda";
    case Options::Mode::kHostStandIn:
      return "host-stand-in";
  }
  return "?";
}

std::vector<uint64_t> sweep_sizes(const Options& options) {
  std::vector<uint64_t> sizes;
  uint64_t bytes = options.min_bytes;
  while (bytes <= options.max_bytes) {
    sizes.push_back(bytes);
    uint64_t next = options.step_bytes > 0 ? bytes + options.step_bytes : bytes * options.factor;
    if (next <= bytes) break;  // -b 0 with a factor, or overflow
    bytes = next;
  }
  return sizes;
}

}  // namespace gloo_lite::bench
