#include "bench_json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "gloo_lite/base/error.h"

namespace gloo_lite::bench {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A number, or null for what was not measured (negative by convention in Timing).
std::string number(double value) {
  if (value < 0 || !std::isfinite(value)) return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

// The keys every object has: what was called, with what.
std::string describe(const Row& row, bool in_place) {
  const CollectiveInfo& info = *row.info;
  std::string object;
  object += "\"collective\": " + quoted(info.name);
  object += ", \"algorithm\": " + quoted(row.requested);
  object += ", \"chosen\": " + quoted(row.chosen);
  object += ", \"P\": " + std::to_string(row.ranks);
  object += ", \"bytes\": " + std::to_string(row.shape.bytes);
  object += ", \"count\": " + std::to_string(row.shape.elements);
  object += ", \"type\": " + quoted(type_name(row.type));
  object += ", \"op\": " + (info.reduces ? quoted(op_name(row.op)) : std::string("null"));
  object += ", \"root\": " + std::to_string(info.rooted ? row.root : -1);
  object += std::string(", \"inplace\": ") + (in_place ? "true" : "false");
  return object;
}

}  // namespace

void JsonReport::add(const Row& row) {
  if (row.overlap.measured) add_overlap(row);
  if (row.out_of_place.measured) add_form(row, row.out_of_place, false);
  if (row.in_place.measured) add_form(row, row.in_place, true);
}

void JsonReport::add_form(const Row& row, const Timing& timing, bool in_place) {
  std::string object = describe(row, in_place);
  object += ", \"iterations\": " + std::to_string(timing.iterations);
  object += ", \"time_us\": " + number(timing.time_us);
  object += ", \"algbw_GBps\": " + number(algbw_gbps(row, timing));
  object += ", \"busbw_GBps\": " + number(busbw_gbps(row, timing));
  object += ", \"wrong\": " + (timing.wrong >= 0 ? std::to_string(timing.wrong) : "null");
  object += ", \"p50_us\": " + number(timing.p50_us);
  object += ", \"p99_us\": " + number(timing.p99_us);
  append(object);
}

void JsonReport::add_overlap(const Row& row) {
  const OverlapTiming& timing = row.overlap;
  std::string object = describe(row, timing.in_place);
  object += ", \"iterations\": " + std::to_string(timing.iterations);
  object += ", \"comm_us\": " + number(timing.comm_us);
  object += ", \"comp_us\": " + number(timing.comp_us);
  object += ", \"total_us\": " + number(timing.total_us);
  // May be negative (the two slowed each other down): not a "not measured" -1.
  char overlap[32];
  std::snprintf(overlap, sizeof(overlap), "%.6g", timing.overlap);
  object += std::string(", \"overlap\": ") + overlap;
  object += ", \"wrong\": " + (timing.wrong >= 0 ? std::to_string(timing.wrong) : "null");
  append(object);
}

void JsonReport::append(const std::string& object) {
  objects_ += (objects_.empty() ? "  {" : ",\n  {") + object + "}";
}

void JsonReport::write(const std::string& path) const {
  std::ofstream file(path);
  file << "[\n" << objects_ << (objects_.empty() ? "" : "\n") << "]\n";
  file.close();
  if (!file) {
    throw Error("--json: cannot write " + path + ": " + std::strerror(errno));
  }
}

}  // namespace gloo_lite::bench
