// The flight recorder: the last N collectives of one context (sequence, tag, what was called,
// the algorithm, when it started and ended, how it ended), kept so that a failure or a hang can
// be explained after the fact. Cheap enough to be always on: one slot write at the start and
// one at the end of a call, under a mutex no other path takes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace gloo_lite {

class FlightRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { kRunning, kDone, kFailed };

  // What was called, as plain data (formatted only when dumped, so recording costs no
  // string building). Names point at static strings.
  struct Call {
    const char* collective = "";
    const char* type = "";
    const char* op = nullptr;  // nullptr: the collective reduces nothing
    int root = -1;             // -1: not rooted
    size_t elements = 0;       // the largest buffer this rank handles
    const char* algorithm = "";
  };
  // "allreduce float32 sum, 1024 elements, ring"
  static std::string describe(const Call& call);
  // The same without the collective's name: "float32 sum, 1024 elements, ring"
  static std::string describe_arguments(const Call& call);

  struct Entry {
    uint64_t sequence = 0;
    uint16_t tag = 0;
    Call call;
    Clock::time_point start;
    Clock::time_point end;
    State state = State::kRunning;
    std::string error;  // first line of the failure
  };

  // `capacity` 0 keeps nothing.
  explicit FlightRecorder(size_t capacity);

  // Records the start of a call; the returned id names its slot for finish().
  // `started`: when it started, for a caller that has just read the clock (each read costs
  // about 40 ns, a tenth of an 8-byte shared-memory call).
  uint64_t start(uint64_t sequence, uint16_t tag, const Call& call,
                 Clock::time_point started = Clock::now());
  void finish(uint64_t id, State state, const std::string& error = {});

  // Oldest first.
  std::vector<Entry> entries() const;
  // One readable block: a heading line, then one line per entry, oldest first; at most the
  // newest `most` entries.
  std::string dump(const std::string& heading,
                   size_t most = std::numeric_limits<size_t>::max()) const;

 private:
  mutable std::mutex mutex_;
  std::vector<Entry> slots_;
  uint64_t next_id_ = 0;  // entries ever started; slot = id % capacity
};

}  // namespace gloo_lite
