// Internal: the registry of live contexts that a flight recorder dump by signal covers
// (gloo_lite/flight_signal.h). Defined in flight_signal.cc, beside the dumper that reads it; a
// context's engine enters it once connected and leaves it first thing in its destructor.
#pragma once

#include <string>

namespace gloo_lite {

class ContextEngine;

void register_live_context(const ContextEngine* context);
void unregister_live_context(const ContextEngine* context);

// What the signal does: one block per live context on stderr, `why` in each heading.
void dump_live_contexts(const std::string& why);

}  // namespace gloo_lite
