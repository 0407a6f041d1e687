// For bindings (the C ABI, the Python module) that reach both forms of a collective through one
// path: run_or_start(blocking, GLOO_LITE_CALL_FORMS(allreduce), context, args...) runs the
// blocking form in the calling thread (an empty Work once it is done) or starts the
// non-blocking one. A call the caller waits for at once must not take the non-blocking path: a
// hand-off to the stream's worker thread costs as much as a small collective.
#pragma once

#include <utility>

#include "gloo_lite/collectives.h"

// Both forms of the collective `name` as two callables (the API's names are overloaded, so they
// cannot be passed as function pointers).
#define GLOO_LITE_CALL_FORMS(name)                                                  \
  [](auto&&... args) { ::gloo_lite::name(std::forward<decltype(args)>(args)...); }, \
      [](auto&&... args) { return ::gloo_lite::i##name(std::forward<decltype(args)>(args)...); }

namespace gloo_lite {

template <typename Blocking, typename NonBlocking, typename... Args>
Work run_or_start(bool blocking, Blocking run, NonBlocking start, Args&&... args) {
  if (!blocking) return start(std::forward<Args>(args)...);
  run(std::forward<Args>(args)...);
  return Work();
}

}  // namespace gloo_lite
