// For the tests of the mixed mesh's wait slices (mixed_mesh.h, rule 2).
#pragma once

#include <sys/resource.h>

namespace gloo_lite::test {

// Voluntary context switches of the calling thread so far: one per sleep that ended in a
// wake-up, however short the sleep (spinning and yielding add none).
inline long thread_sleeps() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

}  // namespace gloo_lite::test
