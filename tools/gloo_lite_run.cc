// gloo_lite_run -n N [options] -- program args...: starts N local ranks around an embedded TCP
// store. The work lives in launcher_options (command line), launcher_spawn (one rank),
// launcher_output (line tagging) and launcher_job (the event loop).
#include <cstdio>
#include <string>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/knobs.h"
#include "tools/launcher_job.h"
#include "tools/launcher_options.h"
#include "tools/launcher_output.h"

namespace {

std::string knob_table() {
  std::string text;
  for (const auto& knob : gloo_lite::gloo_lite_knobs()) {
    text += knob.name;
    text += "  (default: ";
    text += *knob.default_value != '\0' ? knob.default_value : "unset";
    text += ")\n    ";
    text += knob.meaning;
    text += "\n    allowed: ";
    text += gloo_lite::knob_allowed(knob);
    text += "\n";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gloo_lite::launcher;
  gloo_lite::log_set_identity("launcher");
  LauncherOptions options;
  try {
    options = parse_launcher_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    write_whole(2, std::string("gloo_lite_run: ") + e.what() +
                       "\nTry 'gloo_lite_run --help' for more information.\n");
    return 2;
  }
  if (options.help) {
    write_whole(1, launcher_usage());
    return 0;
  }
  if (options.knobs) {
    write_whole(1, knob_table());
    return 0;
  }
  try {
    // The ranks inherit our environment: a bad knob fails here, once, before any rank starts.
    gloo_lite::validate_knobs();
  } catch (const gloo_lite::InvalidArgument& e) {
    write_whole(2, std::string("gloo_lite_run: ") + e.what() + "\n");
    return 2;
  }
  try {
    return run_job(options);
  } catch (const std::exception& e) {
    write_whole(2, std::string("gloo_lite_run: ") + e.what() + "\n");
    return 1;
  }
}
