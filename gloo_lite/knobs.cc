#include "gloo_lite/knobs.h"

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/config.h"

namespace gloo_lite {

void validate_knobs() {
  check_knob_environment();
  // The rule of GLOO_LITE_ALGO needs the registry, which base cannot see; core checks it here.
  algo::check_algorithm_spec(knob_string("GLOO_LITE_ALGO"));
}

}  // namespace gloo_lite
