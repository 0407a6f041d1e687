// Every environment knob of gloo_lite is declared once, in config.cc, with its name, default and
// meaning; `gloo_lite_knobs()` lists them (the docs and `gloo_lite_run --knobs` print that list).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gloo_lite {

struct Knob {
  const char* name;
  const char* default_value;  // as text; "" means unset
  const char* meaning;
};

// All declared knobs, in declaration order.
const std::vector<Knob>& gloo_lite_knobs();

// Reads a declared knob: the environment value if set and non-empty, else its default.
// Asking for an undeclared name is a programming error and throws InvalidArgument.
std::string knob_string(const char* name);
// Parses the knob as an integer; a malformed value throws InvalidArgument naming the knob.
int64_t knob_int(const char* name);
std::chrono::milliseconds knob_ms(const char* name);
double knob_double(const char* name);
bool knob_bool(const char* name);

// Reads a variable that is not ours (launcher variables such as RANK or SLURM_PROCID).
std::optional<std::string> env_value(const char* name);

// Parses "64K", "8M", "1G", "123" into bytes (binary multiples); throws InvalidArgument.
uint64_t parse_bytes(const std::string& text, const char* what);

}  // namespace gloo_lite
