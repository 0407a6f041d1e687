// Per-collective knowledge of gloo_lite_bench: how a size in bytes maps to the call's count, the
// nccl-tests bus-bandwidth factor, where inputs and outputs sit in and out of place, how to run
// one call, and how to fill its inputs and count wrong outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/collective_info.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/types.h"

namespace gloo_lite::bench {

// The library's own list of collectives (gloo_lite/collective_info.h, the tuner's too), so the
// two cannot drift apart.
using Kind = Collective;

// name, reduces, rooted and blocked come from the library's table (gloo_lite/collective_info.h);
// the forms are the benchmark's own.
struct CollectiveInfo {
  Kind kind;
  const char* name;   // as the library names it
  bool reduces;       // takes an op
  bool rooted;        // takes a root
  bool blocked;       // the call's count is one rank's block; the size column is the P blocks
  bool out_of_place;  // has an out-of-place form (broadcast has none)
  bool in_place;      // has an in-place form (alltoall has none)
  // busbw = algbw * factor, as nccl-tests defines it (PERFORMANCE.md there): the fraction of
  // the data every rank's link must carry, so that busbw compares with the link's speed.
  double bus_factor(int ranks) const;
};

// Every collective, in the order `--collective all` runs them.
const std::vector<CollectiveInfo>& all_collectives();
// Throws InvalidArgument listing the names.
const CollectiveInfo& find_collective(const std::string& name);

// One row's sizes: `count` is the call's count argument, `elements` and `bytes` the size columns.
struct Shape {
  size_t count = 0;
  size_t elements = 0;
  size_t bytes = 0;
};
Shape shape_of(const CollectiveInfo& info, uint64_t bytes, DataType type, int ranks);

// Page-aligned memory, touched at allocation so that first-touch faults stay out of the timings.
class Buffer {
 public:
  explicit Buffer(size_t bytes);
  uint8_t* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(uint8_t* pointer) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
};

// The two buffers of every call, each as large as the largest size; allocated once.
struct Buffers {
  explicit Buffers(size_t bytes) : input(bytes), output(bytes) {}
  Buffer input;
  Buffer output;
};

// What one rank passes for a call of one shape, in or out of place.
struct Setup {
  const CollectiveInfo* info = nullptr;
  Shape shape;
  bool in_place = false;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  CollectiveOptions options;
};

// What the timing loop (bench_sweep.h) needs of a call: the CPU collectives (CollectiveCall) and
// the device ones (bench_device.h, -m cuda / host-stand-in) both provide it.
class Call {
 public:
  virtual ~Call() = default;
  // The blocking call.
  virtual void run() const = 0;
  // Writes the deterministic inputs (bench_values.h) where this rank's call reads them.
  virtual void fill_inputs() const = 0;
  // Wrong elements in this rank's result (0 on ranks that receive nothing).
  virtual size_t count_wrong() const = 0;
};

class CollectiveCall : public Call {
 public:
  CollectiveCall(Context& context, const Setup& setup, Buffers& buffers);
  void run() const override;
  // The same call, non-blocking (i<collective>): the buffers are the call's until the Work ends.
  Work start() const;
  void fill_inputs() const override;
  size_t count_wrong() const override;
  // Where the call reads and writes, inside the Buffers it was made with (in place: the same
  // buffer); the device calls place their device pointers at the same offsets.
  uint8_t* input() const { return input_; }
  uint8_t* output() const { return output_; }

 private:
  Work call(bool blocking) const;

  Context& context_;
  Setup setup_;
  int rank_;
  int ranks_;
  uint8_t* input_;   // what the call reads (for in-place calls, inside the output buffer)
  uint8_t* output_;  // what the call writes
};

}  // namespace gloo_lite::bench
