// Flight recorder dumps on demand by signal (GLOO_LITE_FLIGHT_SIGNAL): `kill -USR1 <rank pid>`
// writes the flight record of every live context of that process to stderr, one block per
// context, and the process goes on as before. The registry of live contexts that a dump covers
// is internal (gloo_lite/live_contexts.h).
//
// The handler only writes a byte to a self-pipe (the one async-signal-safe way to hand work
// on); a dumper thread, blocked in read() on the other end, formats the records with the
// ordinary logging and FlightRecorder::dump code. Contexts enter a registry once connected
// and leave it in their destructor, under the registry's mutex, so a dump never reads a
// context that is being destroyed.
#pragma once

#include <string>

namespace gloo_lite {

// GLOO_LITE_FLIGHT_SIGNAL's value as a signal number; 0 for off (empty, "off"). Accepts USR1,
// USR2, RTMIN+n (SIG prefix optional, any case) and the numbers of those signals. Throws
// InvalidArgument naming the knob, the value and what is allowed.
int parse_flight_signal(const std::string& value);
// The knob's signal from the environment (0: off), checked as parse_flight_signal does.
int flight_signal_from_env();
// "SIGUSR1", for messages.
std::string flight_signal_name(int sig);

// Installs the handler for the knob's signal, once per process (a forked child installs its
// own at its first context), and starts the dumper thread. Nothing when the knob is off.
// Leaves a handler the program installed for that signal alone (with a warning).
void install_flight_signal();

}  // namespace gloo_lite
