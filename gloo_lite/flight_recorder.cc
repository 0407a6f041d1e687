#include "gloo_lite/flight_recorder.h"

#include <sstream>

namespace gloo_lite {
namespace {

const char* state_name(FlightRecorder::State state) {
  switch (state) {
    case FlightRecorder::State::kRunning:
      return "running";
    case FlightRecorder::State::kDone:
      return "done";
    case FlightRecorder::State::kFailed:
      return "FAILED";
  }
  return "?";
}

double ms_between(FlightRecorder::Clock::time_point from, FlightRecorder::Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

FlightRecorder::FlightRecorder(size_t capacity) : slots_(capacity) {}

std::string FlightRecorder::describe(const Call& call) {
  return std::string(call.collective) + " " + describe_arguments(call);
}

std::string FlightRecorder::describe_arguments(const Call& call) {
  std::string out = call.type;
  if (call.op != nullptr) out += std::string(" ") + call.op;
  if (call.root >= 0) out += ", root " + std::to_string(call.root);
  out += ", " + std::to_string(call.elements) + " elements";
  if (*call.algorithm) out += std::string(", ") + call.algorithm;
  return out;
}

uint64_t FlightRecorder::start(uint64_t sequence, uint16_t tag, const Call& call,
                               Clock::time_point started) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t id = next_id_++;
  if (slots_.empty()) return id;
  Entry& entry = slots_[id % slots_.size()];
  // Field by field rather than `entry = Entry{}`: the slot's error string keeps its storage
  // (no free and allocation per call).
  entry.sequence = sequence;
  entry.tag = tag;
  entry.call = call;
  entry.start = started;
  entry.end = {};
  entry.state = State::kRunning;
  entry.error.clear();
  return id;
}

void FlightRecorder::finish(uint64_t id, State state, const std::string& error) {
  if (slots_.empty()) return;
  const Clock::time_point end = Clock::now();  // outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  // A slot reused by later calls (more than `capacity` calls ran meanwhile) is not ours.
  if (next_id_ - id > slots_.size()) return;
  Entry& entry = slots_[id % slots_.size()];
  entry.state = state;
  entry.end = end;
  if (!error.empty()) entry.error.assign(error, 0, error.find('\n'));  // start() cleared it
}

std::vector<FlightRecorder::Entry> FlightRecorder::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry> out;
  size_t kept = std::min<uint64_t>(next_id_, slots_.size());
  for (uint64_t id = next_id_ - kept; id < next_id_; ++id) {
    out.push_back(slots_[id % slots_.size()]);
  }
  return out;
}

std::string FlightRecorder::dump(const std::string& heading, size_t most) const {
  std::vector<Entry> recent = entries();
  if (recent.size() > most) recent.erase(recent.begin(), recent.end() - most);
  Clock::time_point now = Clock::now();
  std::ostringstream out;
  out << heading << ": the last " << recent.size() << " collectives, oldest first";
  for (const Entry& entry : recent) {
    out << "\n  #" << entry.sequence << " tag " << entry.tag << ": " << describe(entry.call) << ": "
        << state_name(entry.state);
    out.precision(3);
    out << std::fixed;
    if (entry.state == State::kRunning) {
      out << " for " << ms_between(entry.start, now) << " ms";
    } else {
      out << " in " << ms_between(entry.start, entry.end) << " ms, ended "
          << ms_between(entry.end, now) << " ms ago";
    }
    if (!entry.error.empty()) out << ": " << entry.error;
  }
  return out.str();
}

}  // namespace gloo_lite
