// Whether the CUDA layer can run here, asked in a child process: CUDA initialised in the test
// process would not survive the fork of the ranks. Empty when it can; otherwise why not (the
// skip message of the Cuda/... tests).
#pragma once

#include <string>

namespace gloo_lite::test {

std::string cuda_unavailable_reason();

}  // namespace gloo_lite::test
