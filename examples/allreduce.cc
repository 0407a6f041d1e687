// Sum a std::vector<float> across ranks:  gloo_lite_run -n 4 -- ./allreduce
#include <cstdio>
#include <vector>

#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"

int main() {
  auto context = gloo_lite::init_from_env();  // rank, size and store from gloo_lite_run
  std::vector<float> data(1000, static_cast<float>(context->rank() + 1));
  gloo_lite::allreduce(*context, data);  // in place, sum over all ranks
  float expected = context->size() * (context->size() + 1) / 2.0f;
  std::printf("rank %d: data[0] = %g (expected %g)\n", context->rank(), data[0], expected);
  return data[0] == expected ? 0 : 1;
}
