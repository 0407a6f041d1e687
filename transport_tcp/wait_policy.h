// The TCP transport's parameters of the shared waiting policy (gloo_lite/base/wait_policy.h):
// its polling bounds (GLOO_LITE_SPIN_US) and its estimate of the host's load, from the peers'
// listening addresses.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gloo_lite/base/wait_policy.h"

namespace gloo_lite::tcp {

// GLOO_LITE_SPIN_US set: its value is the bound whatever the load (0: never poll); unset:
// kDefaultWaitBounds (50 us polling with a core per rank, 100 us yielding when ranks outnumber
// cores).
WaitBounds wait_bounds();

// Ranks of a job on this host per CPU this process may use, from the peers' listening addresses
// (peers with this rank's host part count as local; peers without an address, which another
// transport serves, do not) and this process's CPU mask.
double local_ranks_per_core(const std::string& my_address, const std::vector<std::string>& peers);

}  // namespace gloo_lite::tcp
