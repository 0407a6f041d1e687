#include "gloo_lite/knobs.h"

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/flight_signal.h"

namespace gloo_lite {

void validate_knobs() {
  // Every rank inherits the same environment: the typo warning comes from rank 0 (and from
  // gloo_lite_run, which has no rank), not once per rank.
  auto rank = env_value("GLOO_LITE_RANK");
  check_knob_environment(!rank || *rank == "0");
  // The rule of GLOO_LITE_ALGO needs the registry, which base cannot see; core checks it here.
  algo::check_algorithm_spec(knob_string("GLOO_LITE_ALGO"));
  // A signal name or number, which base's rule kinds do not describe.
  parse_flight_signal(knob_string("GLOO_LITE_FLIGHT_SIGNAL"));
}

}  // namespace gloo_lite
