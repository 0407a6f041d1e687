#include "test/cuda/cuda_probe.h"

#include <chrono>
#include <cstring>

#include "cuda/device_layer.h"
#include "test/collectives/process_sync.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {

std::string cuda_unavailable_reason() {
  struct Probe {
    char why[512];
  };
  SharedMapping<Probe> probe;
  auto results = run_processes(
      1,
      [&](int) {
        std::string why;
        if (!cuda::cuda_available(&why)) {
          std::strncpy(probe->why, why.c_str(), sizeof probe->why - 1);
        }
      },
      std::chrono::seconds(60));
  if (!results[0].ok()) return "the CUDA probe process failed: " + results[0].describe();
  return probe->why;
}

}  // namespace gloo_lite::test
