// What this process knows about the machine it runs on, for the tuner: which host it is (so
// that ranks can tell which of them share CPUs) and which CPUs it may run on.
#pragma once

#include <string>
#include <vector>

namespace gloo_lite {

// Names the running kernel instance: processes with equal identities share CPUs. The kernel's
// boot id is the same in every container and network namespace of one machine (they do share
// its CPUs) and differs between machines and VMs; the host name stands in where it is missing.
// Contains no spaces. GLOO_LITE_HOST_ID replaces it (tests fake several hosts with it).
std::string host_identity();

// The CPUs this process may run on (its affinity mask, which taskset, cpusets and launchers'
// binding options narrow), as lowercase hex without leading zeros, CPU 0 in the lowest bit.
// GLOO_LITE_CORES=N replaces it with N CPUs, for hosts whose mask says more than the process
// really gets (CPU quotas).
std::string usable_cpu_mask();

// Hex masks or-ed together, and the number of CPUs a mask names.
std::string merge_cpu_masks(const std::string& a, const std::string& b);
int count_cpus(const std::string& mask);

// The tuner's host load, computed here only: `ranks` sharing `cpus` usable CPUs, as ranks per
// CPU (at least one CPU counts). A context's figure (ContextEngine::ranks_per_core) is the
// busiest host's; the tuner tool's are those of the hosts it describes.
double ranks_per_core(int ranks, double cpus);
// The load of the most crowded host: ranks grouped by host identity (`hosts`, one per rank)
// and each group's CPU masks (`masks`, one per rank) merged, since ranks bound to different
// cores of one host do not share them. 0 for no ranks.
double busiest_host_load(const std::vector<std::string>& hosts,
                         const std::vector<std::string>& masks);

}  // namespace gloo_lite
