// gloo_lite.CudaCommunicator: the CUDA collectives (cuda/collectives.h) on device arrays
// (device_array.h). A call checks its arrays, then starts the stream-ordered C++ call on
// `stream` with the GIL released; async_op=True returns the Work (finished when the stream has
// been let go), otherwise the call waits for it (in slices, Ctrl-C interrupts) and returns the
// output array.
#pragma once

#include <nanobind/nanobind.h>

namespace gloo_lite::python {

void bind_cuda(nanobind::module_& module);

}  // namespace gloo_lite::python
