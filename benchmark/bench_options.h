// Command-line options of gloo_lite_bench, named as in nccl-tests where nccl-tests has the flag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gloo_lite/types.h"

namespace gloo_lite::bench {

struct Options {
  uint64_t min_bytes = 8;                // -b
  uint64_t max_bytes = 64ull << 20;      // -e
  uint64_t factor = 2;                   // -f (used when step_bytes is 0)
  uint64_t step_bytes = 0;               // -i: additive steps instead of a factor
  int iterations = 0;                    // -n; 0: scaled so that each size takes ~seconds_per_size
  double seconds_per_size = 0.3;         // --size-time, for the automatic -n
  int warmup = 5;                        // -w
  bool check = true;                     // -c
  DataType type = DataType::kFloat32;    // -d
  ReduceOp op = ReduceOp::kSum;          // -o
  int root = 0;                          // -r
  std::vector<std::string> algorithms;   // -A: "auto", a name, "all", or a comma list
  std::vector<std::string> collectives;  // --collective: a name, "all", or a comma list
  std::string json_path;                 // --json
  bool per_iteration = false;            // -I
  std::string transport;                 // -t; empty: GLOO_LITE_TRANSPORT decides
  bool verbose = false;                  // -v
  // --overlap MS: time each size blocking, MS ms of computation alone, and the non-blocking
  // form around the computation (bench_overlap.h); 0: off.
  double overlap_ms = 0;
  // --overlap-idle: the computation sleeps instead (bench_compute.h).
  bool overlap_idle = false;
  // -m: where the buffers live. kCpu: host memory, the CPU collectives. kCuda: device memory
  // through gloo_lite::cuda on the CUDA layer (GPU 0). kHostStandIn: the same calls on the host
  // stand-in device layer (no GPU: smoke tests of the device path).
  enum class Mode { kCpu, kCuda, kHostStandIn };
  Mode mode = Mode::kCpu;
  // --copy-limit: instead of the collective tables, the pinned device-to-host and
  // host-to-device copy bandwidth per size on -m's device layer (every rank at once).
  bool copy_limit = false;
  // --slot-bytes, --slots: the device path's staging pool (cuda::PipelineOptions).
  uint64_t slot_bytes = 4ull << 20;
  int slots = 4;
};

// "cpu", "cuda", "host-stand-in".
const char* mode_name(Options::Mode mode);

// Parses argv; prints usage and exits 0 on -h, 2 on a malformed command line (with a message
// naming the flag). Collective and algorithm names are checked later, against the library.
Options parse_options(int argc, char** argv);

// The requested sizes in bytes, from min to max by factor (or step).
std::vector<uint64_t> sweep_sizes(const Options& options);

}  // namespace gloo_lite::bench
