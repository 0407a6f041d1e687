// The CUDA entry points of cuda/device_layer.h in a build without CUDA: the host stand-in and
// the pipeline still work; the CUDA layer reports why it cannot.
#include <string>

#include "cuda/device_layer.h"

namespace gloo_lite::cuda {
namespace {
const char* const kWhy =
    "this build has no CUDA (nvcc was not found when CMake ran, or GLOO_LITE_BUILD_CUDA=OFF)";
}

bool cuda_available(std::string* why) {
  if (why != nullptr) *why = kWhy;
  return false;
}

std::shared_ptr<DeviceLayer> cuda_device_layer(int) {
  throw Unavailable(std::string("cuda device layer: ") + kWhy);
}

}  // namespace gloo_lite::cuda
