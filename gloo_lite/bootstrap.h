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
  // Under torchrun without GLOO_LITE_STORE, rank 0 hosts a gloo_lite TCP store on
  // MASTER_PORT + 1 (torch's own store on MASTER_PORT speaks another protocol): host_store is
  // true on rank 0 and store_port is that port. init_from_env honours it.
  bool host_store = false;
  int store_port = 0;
};

// Reads rank, size and store from the environment. Precedence: GLOO_LITE_RANK/SIZE, torchrun
// (RANK/WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_*), PMI (PMI_RANK/PMI_SIZE), Slurm
// (SLURM_PROCID/SLURM_NTASKS); the first launcher with either variable set supplies both (and
// its local rank: GLOO_LITE_LOCAL_RANK, LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID;
// -1 when unknown). GLOO_LITE_STORE is required except under torchrun (see host_store).
// Throws InvalidArgument saying what is missing or malformed and how to set it.
LaunchInfo read_launch_info();

// Creates the device of this host from the transport table (gloo_lite/transport/table.h):
// every built-in transport that can run here, chosen per pair of ranks at connect (shared
// memory, ibverbs, TCP, in that order). GLOO_LITE_TRANSPORT=tcp|ibverbs|shm forces one for
// every pair (connect then fails, naming the ranks, when it cannot serve some pair); auto (the
// default) lets each pair choose. GLOO_LITE_IFNAME and GLOO_LITE_HOSTNAME apply as before.
std::shared_ptr<transport::Device> create_device_from_env();

// read_launch_info + open_store (scoped by GLOO_LITE_PREFIX) + device + Context::create, all
// within options.timeout (GLOO_LITE_TIMEOUT_MS when zero). Sets the rank shown in log lines.
std::shared_ptr<Context> init_from_env(ContextOptions options = {});

}  // namespace gloo_lite
