// Shared by the backends: how keys appear in error messages, and how a deadline is reported.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite::store_detail {

// "\"rank/3\"", with bytes outside printable ASCII escaped as \xNN and very long keys shortened,
// so that a binary or huge key cannot garble a log line.
std::string quote_key(const std::string& key);
// Quoted keys separated by ", "; the first few only, then "and N more".
std::string quote_keys(const std::vector<std::string>& keys);

// The TimeoutError every backend throws when get/wait/multi_get gives up: it names the store,
// the keys still missing and how long this call waited.
[[noreturn]] void throw_key_timeout(const std::string& store,
                                    const std::vector<std::string>& missing,
                                    Deadline::Clock::time_point started);

}  // namespace gloo_lite::store_detail
