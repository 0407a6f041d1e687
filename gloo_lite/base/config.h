// Every environment knob of gloo_lite is declared once, in knob_table.cc, with its name, default,
// meaning and what values it allows; `gloo_lite_knobs()` lists them (the docs and
// `gloo_lite_run --knobs` print that list). One mechanism checks every knob: the typed readers
// below reject a value outside its knob's rule, and check_knob_environment() (called through
// gloo_lite::validate_knobs() in gloo_lite/knobs.h at start) checks every knob that is set.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gloo_lite {

enum class KnobKind : uint8_t {
  kText,          // anything (URLs, names, interface specs: their readers check them)
  kInteger,       // decimal integer in [min_int, max_int]
  kMilliseconds,  // decimal integer of milliseconds in [min_int, max_int]
  kBytes,         // byte size "123", "64K", "8M", "1G" in [min_int, max_int]
  kNumber,        // decimal number in [min_number, max_number]
  kSwitch,        // 1/0, true/false, yes/no, on/off
  kWord,          // one of `words`
  kWordList,      // comma list of `words`
  kAlgorithms,    // GLOO_LITE_ALGO's syntax; the names are checked against the registry (core)
};

struct KnobRule {
  KnobKind kind = KnobKind::kText;
  int64_t min_int = 0;
  int64_t max_int = 0;
  double min_number = 0;
  double max_number = 0;
  const char* words = "";  // kWord, kWordList: the allowed words, separated by single spaces
};

struct Knob {
  const char* name;
  const char* default_value;  // as text; "" means unset
  const char* meaning;
  KnobRule allowed;
};

// All declared knobs, in declaration order.
const std::vector<Knob>& gloo_lite_knobs();
// The declared knob of this name, or nullptr.
const Knob* find_knob(const std::string& name);

// What the knob allows, for --knobs and error messages: "milliseconds in 1..2592000000".
std::string knob_allowed(const Knob& knob);
// Throws InvalidArgument naming the knob, the value and what is allowed when `value` breaks the
// knob's rule (kAlgorithms: only checked by gloo_lite::validate_knobs, which knows the names).
void check_knob_value(const Knob& knob, const std::string& value);

// Checks every declared knob that is set in the environment (check_knob_value) and, with
// `warn_unknown`, warns once per process about GLOO_LITE_* variables that are no knob, naming
// the closest knob.
void check_knob_environment(bool warn_unknown = true);
// The declared knob whose name is closest to `name` (edit distance, a swap of neighbouring
// letters counting as one edit; ties go to the earlier declaration).
const Knob& closest_knob(const std::string& name);

// Reads a declared knob: the environment value if set and non-empty, else its default.
// Asking for an undeclared name is a programming error and throws InvalidArgument.
std::string knob_string(const char* name);
// Typed readers: parse by the knob's kind and throw InvalidArgument (naming the knob, the value
// and what is allowed) when the value is malformed or outside the knob's range.
int64_t knob_int(const char* name);  // kInteger, kMilliseconds, kBytes (suffixes allowed)
std::chrono::milliseconds knob_ms(const char* name);
double knob_double(const char* name);
bool knob_bool(const char* name);

// Reads a variable that is not ours (launcher variables such as RANK or SLURM_PROCID).
std::optional<std::string> env_value(const char* name);

// The binary multiples of byte sizes ("64K", "8M", "1G"), for the knob table's ranges.
inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// Parses "64K", "8M", "1G", "123" into bytes (binary multiples); throws InvalidArgument for a
// malformed, negative or overflowing size.
uint64_t parse_bytes(const std::string& text, const char* what);

}  // namespace gloo_lite
