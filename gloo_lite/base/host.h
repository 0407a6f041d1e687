// What this process knows about the machine it runs on, for the tuner: which host it is (so
// that ranks can tell which of them share CPUs) and which CPUs it may run on.
#pragma once

#include <string>

namespace gloo_lite {

// Names the running kernel instance: processes with equal identities share CPUs. The kernel's
// boot id is the same in every container and network namespace of one machine (they do share
// its CPUs) and differs between machines and VMs; the host name stands in where it is missing.
// Contains no spaces.
std::string host_identity();

// The CPUs this process may run on (its affinity mask, which taskset, cpusets and launchers'
// binding options narrow), as lowercase hex without leading zeros, CPU 0 in the lowest bit.
// GLOO_LITE_CORES=N replaces it with N CPUs, for hosts whose mask says more than the process
// really gets (CPU quotas).
std::string usable_cpu_mask();

// Hex masks or-ed together, and the number of CPUs a mask names.
std::string merge_cpu_masks(const std::string& a, const std::string& b);
int count_cpus(const std::string& mask);

}  // namespace gloo_lite
