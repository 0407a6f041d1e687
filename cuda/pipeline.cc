// The staging pipeline (cuda/pipeline.h): the chunk loop and the Communicator's worker.
#include "cuda/pipeline.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "cuda/gpudirect.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/work.h"

namespace gloo_lite::cuda {

void run_chunks(Lanes& lanes, const ChunkSteps& steps) {
  DeviceLayer& layer = *lanes.layer;
  const size_t slots = lanes.slots.size();
  const size_t chunks = steps.chunks;
  std::vector<Work> wires(slots);  // wire of the chunk in each slot

  auto stage = [&](size_t chunk) {
    Slot& slot = lanes.slots[chunk % slots];
    if (chunk >= slots) layer.wait_event(lanes.to_host, slot.drained);
    if (steps.stage) steps.stage(chunk, slot);
    layer.record(slot.staged, lanes.to_host);
  };
  auto drain = [&](size_t chunk) {
    Slot& slot = lanes.slots[chunk % slots];
    Work wire = std::move(wires[chunk % slots]);
    wires[chunk % slots] = Work();
    wire.wait();
    if (steps.drain) steps.drain(chunk, slot);
    layer.record(slot.drained, lanes.to_device);
    if (chunk + slots < chunks) stage(chunk + slots);
  };

  try {
    for (size_t chunk = 0; chunk < std::min(slots, chunks); ++chunk) stage(chunk);
    for (size_t chunk = 0; chunk < chunks; ++chunk) {
      Slot& slot = lanes.slots[chunk % slots];
      layer.synchronize_event(slot.staged);
      wires[chunk % slots] = steps.wire(chunk, slot);
      // Chunk `chunk` is now queued behind chunk-1 on the CPU stream: drain chunk-1 while it
      // goes over the wire (and stage chunk-1+S into the slot chunk-1 frees).
      if (chunk >= 1) drain(chunk - 1);
    }
    if (chunks > 0) drain(chunks - 1);
  } catch (...) {
    for (Work& wire : wires) {
      try {
        wire.wait();
      } catch (...) {  // the first error is the one rethrown
      }
    }
    throw;
  }
}

struct Communicator::Engine::Job {
  uint64_t number = 0;
  Event start = nullptr;   // recorded on the caller's stream at the call
  Event passed = nullptr;  // recorded on it after the hold: the stream no longer reads counter_
  std::function<void(Lanes&)> body;
  std::optional<WorkPromise> work;  // made under the lock, with its number
};

Communicator::Engine::Engine(Context& context_in, std::shared_ptr<DeviceLayer> layer_in,
                             PipelineOptions options_in)
    : context(context_in), layer(std::move(layer_in)), options(options_in) {
  if (!layer) throw InvalidArgument("cuda::Communicator: the device layer is null");
  if (options.slots < 2) {
    throw InvalidArgument("cuda::Communicator: the staging pool needs at least 2 slots (got " +
                          std::to_string(options.slots) + ")");
  }
  // The widest chunk plan (alltoall: 2P blocks of one 8-byte element) must fit a slot.
  const size_t minimum = size_t{16} * static_cast<size_t>(context.size());
  if (options.slot_bytes < minimum) {
    throw InvalidArgument("cuda::Communicator: slot_bytes " + std::to_string(options.slot_bytes) +
                          " is below the minimum of " + std::to_string(minimum) + " bytes for " +
                          std::to_string(context.size()) + " ranks");
  }
  // Before anything is allocated: a rank that fails here has nothing to free.
  Agreement mine;
  mine.gpudirect = gpudirect_possible(context, *layer);
  if (options.reduce_on == ReduceOn::kAuto && context.size() > 1) {
    // A failed measurement leaves the speeds unknown (kHost) rather than this rank out of the
    // agreement, where the others would wait for it until the timeout.
    try {
      mine.speeds = measure_speeds(*layer);
    } catch (const std::exception& e) {
      LOG_WARN("cuda",
               "measuring copy and reduction speeds failed, reducing on the host: " << e.what());
    }
  }
  agreement = agree(context, mine, options.setup_tag);
  lanes_.layer = layer.get();
  lanes_.slot_bytes = options.slot_bytes;
  // Everything is allocated here, once: a call allocates nothing.
  try {
    lanes_.to_host = layer->create_stream();
    lanes_.to_device = layer->create_stream();
    counter_ = layer->allocate_counter();
    for (int i = 0; i < options.slots; ++i) {
      Slot& slot = lanes_.slots.emplace_back();
      slot.staged = layer->create_event();
      slot.drained = layer->create_event();
      slot.host = static_cast<std::byte*>(layer->allocate_pinned(options.slot_bytes));
      if (options.reduce_on != ReduceOn::kHost) {
        slot.scratch = static_cast<std::byte*>(layer->allocate_device(options.slot_bytes));
      }
    }
  } catch (...) {
    release();
    throw;
  }
  worker_ = std::thread([this] { run(); });
}

Communicator::Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();  // after every queued job
  release();
}

void Communicator::Engine::release() noexcept {
  // Streams first: destroying one runs what is still queued on it, which may touch the slots.
  if (lanes_.to_device != nullptr) layer->destroy_stream(lanes_.to_device);
  if (lanes_.to_host != nullptr) layer->destroy_stream(lanes_.to_host);
  lanes_.to_device = lanes_.to_host = nullptr;
  for (Slot& slot : lanes_.slots) {
    if (slot.scratch != nullptr) layer->free_device(slot.scratch);
    if (slot.host != nullptr) layer->free_pinned(slot.host);
    if (slot.drained != nullptr) layer->destroy_event(slot.drained);
    if (slot.staged != nullptr) layer->destroy_event(slot.staged);
  }
  lanes_.slots.clear();
  if (counter_ != nullptr) layer->free_counter(counter_);
  counter_ = nullptr;
}

Work Communicator::Engine::submit(std::string what, Stream stream,
                                  std::function<void(Lanes&)> body) {
  auto job = std::make_unique<Job>();
  job->body = std::move(body);
  job->start = layer->create_event();
  job->passed = layer->create_event();
  Work work;
  {
    // Under the lock: the numbers, the holds on the streams and the queue agree in order.
    std::lock_guard<std::mutex> lock(mutex_);
    job->number = ++submitted_;
    job->work.emplace("staged", "cuda " + what + " #" + std::to_string(job->number));
    work = job->work->work();
    try {
      layer->record(job->start, stream);
      layer->wait_counter(stream, counter_, job->number);
      layer->record(job->passed, stream);
    } catch (...) {
      // Nothing holds the stream on this number: let later holds (number + 1 ...) not wait
      // for it either.
      --submitted_;
      layer->destroy_event(job->start);
      layer->destroy_event(job->passed);
      throw;
    }
    queue_.push_back(std::move(job));
  }
  changed_.notify_all();
  return work;
}

void Communicator::Engine::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = submitted_;
  changed_.wait(lock, [&] { return finished_ >= target; });
  if (first_error_) std::rethrow_exception(first_error_);
}

void Communicator::Engine::run() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    run_job(*job);
  }
}

void Communicator::Engine::run_job(Job& job) {
  std::exception_ptr error;
  try {
    // The caller's earlier work produced the input and may still read the output.
    layer->wait_event(lanes_.to_host, job.start);
    layer->wait_event(lanes_.to_device, job.start);
    job.body(lanes_);
  } catch (...) {
    error = std::current_exception();
  }
  try {
    // Every copy into the output (and out of the slots) has completed before the stream goes.
    layer->synchronize_stream(lanes_.to_host);
    layer->synchronize_stream(lanes_.to_device);
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  // The stream goes on first: a Work::on_finish callback (torch's future completes in one) may
  // enqueue work on the caller's stream and wait for it.
  layer->set_counter(counter_, job.number);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = job.number;
    if (error && !first_error_) first_error_ = error;
  }
  changed_.notify_all();
  job.work->finish(error);
  try {
    // The counter's memory must outlive every stream's look at it (the destructor frees it).
    layer->synchronize_event(job.passed);
  } catch (const std::exception& e) {
    LOG_WARN("cuda", job.work->describe() << ": " << e.what());
  }
  layer->destroy_event(job.passed);
  layer->destroy_event(job.start);
}

}  // namespace gloo_lite::cuda
