// Bootstrap from the environment that launchers already set: gloo_lite_run, torchrun, Open MPI,
// PMI (MPICH, Hydra) and Slurm.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "gloo_lite/context.h"

namespace gloo_lite {

struct LaunchInfo {
  int rank = -1;
  int size = -1;
  int local_rank = -1;
  std::string store_url;  // GLOO_LITE_STORE, or tcp://MASTER_ADDR:MASTER_PORT under torchrun
  std::string source;     // which launcher's variables were used, for messages
};

// Reads rank, size and store from the environment. Precedence: GLOO_LITE_RANK/SIZE, torchrun
// (RANK/WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_*), PMI (PMI_RANK/PMI_SIZE), Slurm
// (SLURM_PROCID/SLURM_NTASKS). Throws InvalidArgument saying what is missing and how to set it.
LaunchInfo read_launch_info();

// Creates the TCP (or GLOO_LITE_TRANSPORT) device for this host, honouring GLOO_LITE_IFNAME and
// GLOO_LITE_HOSTNAME.
std::shared_ptr<transport::Device> create_device_from_env();

// read_launch_info + open_store (scoped by GLOO_LITE_PREFIX) + device + Context::create.
std::shared_ptr<Context> init_from_env(ContextOptions options = {});

}  // namespace gloo_lite
