// Runs one gloo_lite_run job: the embedded store, N rank processes, their tagged output, and
// stopping everything on the first failure.
#pragma once

#include "tools/launcher_options.h"

namespace gloo_lite::launcher {

// Runs the job described by `options` and returns gloo_lite_run's exit status. Must be called
// before the process has started any thread: it blocks the signals it waits for (SIGCHLD,
// SIGINT, SIGTERM, SIGHUP) so that every later thread inherits the mask.
int run_job(const LauncherOptions& options);

}  // namespace gloo_lite::launcher
