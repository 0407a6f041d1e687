// A call's blocking and non-blocking forms side by side, for bindings that reach both through
// one path (the C ABI, the Python module): forms(blocking, args...) runs the blocking form in
// the calling thread (returning an empty Work once it is done) or starts the non-blocking one
// (returning its Work). A call the caller waits for at once must take the blocking form: a
// hand-off to the stream's worker thread costs as much as a small collective.
#pragma once

#include <utility>

#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/work.h"

namespace gloo_lite {

template <typename Blocking, typename NonBlocking>
struct CallForms {
  Blocking run;       // returns once the call is done
  NonBlocking start;  // returns the call's Work

  template <typename... Args>
  Work operator()(bool blocking, Args&&... args) const {
    if (!blocking) return start(std::forward<Args>(args)...);
    run(std::forward<Args>(args)...);
    return Work();
  }
};

template <typename Blocking, typename NonBlocking>
CallForms<Blocking, NonBlocking> call_forms(Blocking run, NonBlocking start) {
  return {run, start};
}

}  // namespace gloo_lite

// The forms of the collective gloo_lite::name and gloo_lite::iname. Lambdas, not function
// pointers: the API's names are overloaded.
#define GLOO_LITE_FORMS(name)                                                           \
  ::gloo_lite::call_forms(                                                              \
      [](auto&&... args) { ::gloo_lite::name(std::forward<decltype(args)>(args)...); }, \
      [](auto&&... args) { return ::gloo_lite::i##name(std::forward<decltype(args)>(args)...); })

// The forms of the Context member `name` and its non-blocking twin `iname` (send, isend).
#define GLOO_LITE_MEMBER_FORMS(name)                                                             \
  ::gloo_lite::call_forms([](::gloo_lite::Context& c,                                            \
                             auto&&... args) { c.name(std::forward<decltype(args)>(args)...); }, \
                          [](::gloo_lite::Context& c, auto&&... args) {                          \
                            return c.i##name(std::forward<decltype(args)>(args)...);             \
                          })
