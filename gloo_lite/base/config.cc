#include "gloo_lite/base/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

extern char** environ;

namespace gloo_lite {
namespace {

// Variables of the test and CI harnesses (GLOO_LITE_TEST_TRANSPORT, GLOO_LITE_VM_*), which the
// library never reads: no typo warning for them.
constexpr const char* kHarnessPrefixes[] = {"GLOO_LITE_TEST_", "GLOO_LITE_VM_"};

}  // namespace

static const Knob& declared_knob(const char* name) {
  if (const Knob* knob = find_knob(name)) return *knob;
  throw InvalidArgument(std::string("internal: undeclared knob ") + name);
}

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool is_word_of(const std::string& word, const char* words) {
  for (const auto& allowed : split(words, ' ')) {
    if (word == allowed) return true;
  }
  return false;
}

std::string comma_words(const char* words) {
  std::string text;
  for (const auto& word : split(words, ' ')) text += (text.empty() ? "" : ", ") + word;
  return text;
}

// Byte sizes read best with the largest binary suffix that divides them exactly.
std::string bytes_text(int64_t value) {
  for (auto [scale, suffix] : {std::pair{kGiB, "G"}, {kMiB, "M"}, {kKiB, "K"}}) {
    if (value >= scale && value % scale == 0) return std::to_string(value / scale) + suffix;
  }
  return std::to_string(value);
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// A decimal integer; nullopt when malformed or beyond int64.
std::optional<int64_t> parse_integer(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  bool digits_first = std::isdigit(static_cast<unsigned char>(text[0])) ||
                      (text.size() > 1 && (text[0] == '-' || text[0] == '+'));
  if (!digits_first || *end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

[[noreturn]] void reject(const Knob& knob, const std::string& value, const char* problem) {
  throw InvalidArgument(std::string(knob.name) + "='" + value + "' " + problem +
                        "; allowed: " + knob_allowed(knob) + " (see gloo_lite_run --knobs)");
}

// The knob's value as an integer of its kind, range checked.
int64_t checked_integer(const Knob& knob, const std::string& value) {
  int64_t parsed = 0;
  if (knob.allowed.kind == KnobKind::kBytes) {
    try {
      uint64_t size = parse_bytes(value, knob.name);
      if (size > static_cast<uint64_t>(INT64_MAX)) reject(knob, value, "is out of range");
      parsed = static_cast<int64_t>(size);
    } catch (const InvalidArgument&) {
      reject(knob, value, "is not a byte size");
    }
  } else if (auto integer = parse_integer(value)) {
    parsed = *integer;
  } else {
    reject(knob, value, "is not an integer");
  }
  if (parsed < knob.allowed.min_int || parsed > knob.allowed.max_int) {
    reject(knob, value, "is out of range");
  }
  return parsed;
}

std::optional<bool> parse_switch(const std::string& text) {
  for (const char* word : {"1", "true", "yes", "on"}) {
    if (text == word) return true;
  }
  for (const char* word : {"0", "false", "no", "off"}) {
    if (text == word) return false;
  }
  return std::nullopt;
}

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// neighbours each cost 1 (transposed letters are the commonest typo: TIMOEUT, ALOG).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string knob_allowed(const Knob& knob) {
  const KnobRule& rule = knob.allowed;
  switch (rule.kind) {
    case KnobKind::kText:
      return "text";
    case KnobKind::kInteger:
      return "integer in " + std::to_string(rule.min_int) + ".." + std::to_string(rule.max_int);
    case KnobKind::kMilliseconds:
      return "milliseconds in " + std::to_string(rule.min_int) + ".." +
             std::to_string(rule.max_int);
    case KnobKind::kBytes:
      return "bytes in " + bytes_text(rule.min_int) + ".." + bytes_text(rule.max_int) +
             " (suffix K, M, G: binary multiples)";
    case KnobKind::kNumber:
      return "number in " + number_text(rule.min_number) + ".." + number_text(rule.max_number);
    case KnobKind::kSwitch:
      return "1, 0, true, false, yes, no, on, off";
    case KnobKind::kWord:
      return "one of " + comma_words(rule.words);
    case KnobKind::kWordList:
      return "comma list of " + comma_words(rule.words);
    case KnobKind::kAlgorithms:
      return "collective:algorithm pairs separated by ';' or ',', or one algorithm name, each "
             "from the registry (auto allowed)";
  }
  return "?";
}

void check_knob_value(const Knob& knob, const std::string& value) {
  const KnobRule& rule = knob.allowed;
  switch (rule.kind) {
    case KnobKind::kText:
    case KnobKind::kAlgorithms:
      return;
    case KnobKind::kInteger:
    case KnobKind::kMilliseconds:
    case KnobKind::kBytes:
      checked_integer(knob, value);
      return;
    case KnobKind::kNumber: {
      char* end = nullptr;
      double parsed = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(parsed)) {
        reject(knob, value, "is not a number");
      }
      if (parsed < rule.min_number || parsed > rule.max_number) {
        reject(knob, value, "is out of range");
      }
      return;
    }
    case KnobKind::kSwitch:
      if (!parse_switch(value)) reject(knob, value, "is not a switch");
      return;
    case KnobKind::kWord:
      if (!is_word_of(value, rule.words)) reject(knob, value, "is not a known word");
      return;
    case KnobKind::kWordList:
      for (const auto& word : split(value, ',')) {
        if (!is_word_of(word, rule.words)) {
          reject(knob, value, ("has an unknown entry '" + word + "'").c_str());
        }
      }
      return;
  }
}

const Knob& closest_knob(const std::string& name) {
  const Knob* best = &gloo_lite_knobs().front();
  size_t best_distance = SIZE_MAX;
  for (const auto& knob : gloo_lite_knobs()) {
    size_t distance = edit_distance(name, knob.name);
    if (distance < best_distance) best_distance = distance, best = &knob;
  }
  return *best;
}

void check_knob_environment(bool warn_unknown) {
  for (const auto& knob : gloo_lite_knobs()) {
    if (auto value = env_value(knob.name)) check_knob_value(knob, *value);
  }
  if (!warn_unknown) return;
  // One warning per unknown variable and process, however many contexts are created.
  static std::mutex mutex;
  static std::vector<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string variable = *entry;
    std::string name = variable.substr(0, variable.find('='));
    if (name.compare(0, 10, "GLOO_LITE_") != 0 || find_knob(name) != nullptr) continue;
    bool harness = false;
    for (const char* prefix : kHarnessPrefixes) {
      harness = harness || name.compare(0, std::strlen(prefix), prefix) == 0;
    }
    if (harness) continue;
    bool seen = false;
    for (const auto& done : warned) seen = seen || done == name;
    if (seen) continue;
    warned.push_back(name);
    LOG_WARN("config", name << " is set but is not a gloo_lite knob and is ignored; closest knob: "
                            << closest_knob(name).name << " (gloo_lite_run --knobs lists them)");
  }
}

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string knob_string(const char* name) {
  const Knob& knob = declared_knob(name);
  if (auto value = env_value(name)) return *value;
  return knob.default_value;
}

int64_t knob_int(const char* name) {
  const Knob& knob = declared_knob(name);
  std::string text = knob_string(name);
  if (text.empty()) return 0;
  switch (knob.allowed.kind) {
    case KnobKind::kInteger:
    case KnobKind::kMilliseconds:
    case KnobKind::kBytes:
      return checked_integer(knob, text);
    default:
      throw InvalidArgument(std::string("internal: knob ") + name + " is not an integer knob");
  }
}

double knob_double(const char* name) {
  const Knob& knob = declared_knob(name);
  std::string text = knob_string(name);
  check_knob_value(knob, text);
  return std::strtod(text.c_str(), nullptr);
}

std::chrono::milliseconds knob_ms(const char* name) {
  return std::chrono::milliseconds(knob_int(name));
}

bool knob_bool(const char* name) {
  const Knob& knob = declared_knob(name);
  std::string text = knob_string(name);
  if (text.empty()) return false;
  auto value = parse_switch(text);
  if (!value) reject(knob, text, "is not a switch");
  return *value;
}

uint64_t parse_bytes(const std::string& text, const char* what) {
  auto bad = [&](const char* problem) {
    return InvalidArgument(std::string(what) + ": '" + text + "' " + problem +
                           " (expected a byte count such as 4096, 64K, 8M or 1G)");
  };
  // strtoull would skip blanks and wrap a minus sign around: "-5" must not become 2^64 - 5.
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) {
    throw bad("is not a size");
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) throw bad("is too large");
  uint64_t scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = 1ull << 30, ++end;
  if (*end != '\0') throw bad("is not a size");
  if (value > UINT64_MAX / scale) throw bad("is too large");
  return value * scale;
}

}  // namespace gloo_lite
