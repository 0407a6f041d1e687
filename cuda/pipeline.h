// Internal: the staging pipeline under cuda/collectives.h.
//
// Lanes: the pool of pinned slots (allocated once per Communicator) and two internal streams,
// `to_host` (device-to-host copies) and `to_device` (host-to-device copies and reduction
// kernels), so that both copy directions run at once.
//
// run_chunks drives one call as a sequence of chunks, each in one slot (slot k % S), in three
// steps: stage (enqueue the copies that fill the slot, on to_host), wire (start the CPU
// collective on the slot; returns its Work) and drain (enqueue what empties the slot into the
// output, on to_device). Per slot, event `staged` says the slot is full and `drained` that it has
// been emptied; the orderings that make reuse safe are:
//   stage(k+S) waits (on the device) for drained(k)  -- do not overwrite a slot being drained;
//   wire(k) waits (on the host) for staged(k)        -- do not send what is not there yet, and,
//                                                      through the above, do not receive into
//                                                      a slot still being drained;
//   drain(k) follows wire(k)'s Work                  -- do not copy out what has not arrived.
// Chunk k+1's stage, chunk k's wire and chunk k-1's drain are in flight together.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/agreement.h"
#include "cuda/collectives.h"
#include "cuda/device_layer.h"

namespace gloo_lite::cuda {

struct Slot {
  std::byte* host = nullptr;     // pinned, slot_bytes
  std::byte* scratch = nullptr;  // device, slot_bytes (ReduceOn::kDevice and kAuto only)
  Event staged = nullptr;
  Event drained = nullptr;
};

struct Lanes {
  DeviceLayer* layer = nullptr;
  Stream to_host = nullptr;
  Stream to_device = nullptr;
  std::vector<Slot> slots;
  size_t slot_bytes = 0;
};

struct ChunkSteps {
  size_t chunks = 0;
  std::function<void(size_t chunk, Slot& slot)> stage;  // may be empty
  std::function<Work(size_t chunk, Slot& slot)> wire;
  std::function<void(size_t chunk, Slot& slot)> drain;  // may be empty
};

// Runs every chunk; returns once the last drain has been enqueued (not completed). On an error,
// waits for every started wire before it rethrows, so that no CPU collective still uses a slot.
void run_chunks(Lanes& lanes, const ChunkSteps& steps);

class Communicator::Engine {
 public:
  Engine(Context& context, std::shared_ptr<DeviceLayer> layer, PipelineOptions options);
  ~Engine();

  // Enqueues `body` to run on the worker after the work enqueued on `stream` so far, and holds
  // `stream` until it has run and the copies it enqueued have completed. `what` describes the
  // call ("allreduce (float32 sum, 1024 elements)") for the Work and errors.
  Work submit(std::string what, Stream stream, std::function<void(Lanes& lanes)> body);
  void synchronize();

  Context& context;
  const std::shared_ptr<DeviceLayer> layer;
  const PipelineOptions options;
  Agreement agreement;  // set by the constructor, before the worker starts

 private:
  struct Job;
  void run();
  void run_job(Job& job);
  void release() noexcept;  // frees what the constructor made (also when it failed midway)

  Lanes lanes_;
  uint64_t* counter_ = nullptr;  // jobs finished; the callers' streams wait on it

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Job>> queue_;  // under mutex_
  uint64_t submitted_ = 0;                  // under mutex_
  uint64_t finished_ = 0;                   // under mutex_
  std::exception_ptr first_error_;          // under mutex_
  bool stopping_ = false;                   // under mutex_
  std::thread worker_;
};

}  // namespace gloo_lite::cuda
