// validate_knobs(): the start-up check of every GLOO_LITE_* knob in the environment. Called by
// init_from_env(), Context::create, gloo_lite_run and gloo_lite_bench, so that a bad value fails
// at once with InvalidArgument naming the knob, the value and what is allowed, instead of
// surfacing later as a store time-out or being silently ignored.
#pragma once

namespace gloo_lite {

// Checks each set knob against the rule its declaration in base/knob_table.cc gives (ranges, byte
// sizes, words), GLOO_LITE_ALGO against the algorithm registry, and warns once per process about
// unknown GLOO_LITE_* variables, naming the closest knob (not in ranks other than 0 by
// GLOO_LITE_RANK: one warning per job, not per rank). Cheap: safe to call per context.
void validate_knobs();

}  // namespace gloo_lite
