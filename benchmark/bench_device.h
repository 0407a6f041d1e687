// gloo_lite_bench -m cuda / -m host-stand-in: the collectives on device buffers through
// gloo_lite::cuda (cuda/collectives.h), timed by the same loop and printed in the same tables as
// the CPU mode; and --copy-limit, the pinned copy bandwidth that bounds the staging pipeline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "bench_collective.h"
#include "bench_options.h"
#include "cuda/collectives.h"
#include "gloo_lite/context.h"

namespace gloo_lite::bench {

// What a device-mode run holds for its whole sweep: the layer, one Communicator (its pinned
// pool), a stream, and two device buffers as large as the largest size. Throws
// cuda::Unavailable (with the reason) when -m cuda finds no usable GPU.
class DeviceRun {
 public:
  DeviceRun(Context& context, const Options& options);
  ~DeviceRun();
  DeviceRun(const DeviceRun&) = delete;
  DeviceRun& operator=(const DeviceRun&) = delete;

  cuda::DeviceLayer& layer() const { return *layer_; }
  cuda::Communicator& communicator() const { return *communicator_; }
  cuda::Stream stream() const { return stream_; }
  uint8_t* input() const { return input_; }
  uint8_t* output() const { return output_; }
  // For the run header: "cuda (device 0: ...), staging 4 x 4 MiB".
  std::string describe() const;

 private:
  std::shared_ptr<cuda::DeviceLayer> layer_;
  std::unique_ptr<cuda::Communicator> communicator_;
  cuda::Stream stream_ = nullptr;
  uint8_t* input_ = nullptr;
  uint8_t* output_ = nullptr;
};

// One call on device buffers. The inputs are made and checked on the host, by a CollectiveCall
// on `host` (the CPU mode's values and checks), and copied in and out around the timed loop;
// the device pointers sit at the same offsets as the host call's, so in place stays in place.
class DeviceCall : public Call {
 public:
  // Throws InvalidArgument for a collective without a device form (gather, scatter, barrier).
  DeviceCall(Context& context, const Setup& setup, Buffers& host, DeviceRun& device);
  void run() const override;
  void fill_inputs() const override;
  size_t count_wrong() const override;

 private:
  uint8_t* on_device(const uint8_t* host) const;

  Setup setup_;
  Buffers& host_buffers_;
  DeviceRun& device_;
  CollectiveCall host_;
  uint8_t* input_;
  uint8_t* output_;
};

// Whether the device modes have a form of this collective.
bool has_device_form(Kind kind);

// --copy-limit: per size of the sweep, the pinned device-to-host and host-to-device bandwidth
// (GB/s, the slowest rank's, all ranks copying at once), printed by rank 0 as a table, and added
// to --json as {"copy": "d2h"|"h2d", "bytes", "time_us", "GBps"} rows. Collective over the
// context.
void measure_copy_limit(Context& context, DeviceRun& device, const Options& options);

}  // namespace gloo_lite::bench
