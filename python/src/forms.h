// A C++ call's blocking and non-blocking forms side by side, so that PyContext::run can start
// whichever it needs on the same arguments: the blocking form when Python waits for the call at
// once (it then runs in the calling thread, as C++'s blocking calls do), else the non-blocking
// one, whose Work becomes a gloo_lite.Work.
#pragma once

#include <utility>

#include "gloo_lite/collectives.h"
#include "gloo_lite/work.h"

namespace gloo_lite::python {

template <typename Blocking, typename NonBlocking>
struct Forms {
  Blocking run;       // returns once the call is done
  NonBlocking start;  // returns the call's Work

  // start(args...), or run(args...) and an empty Work when `blocking`.
  template <typename... Args>
  Work operator()(bool blocking, Args&&... args) const {
    if (!blocking) return start(std::forward<Args>(args)...);
    run(std::forward<Args>(args)...);
    return Work();
  }
};

template <typename Blocking, typename NonBlocking>
Forms<Blocking, NonBlocking> forms(Blocking run, NonBlocking start) {
  return {run, start};
}

}  // namespace gloo_lite::python

// The forms of the collective gloo_lite::name and gloo_lite::iname. Lambdas, not function
// pointers: the C++ names are overloaded.
#define GLOO_LITE_FORMS(name)                                                           \
  ::gloo_lite::python::forms(                                                           \
      [](auto&&... args) { ::gloo_lite::name(std::forward<decltype(args)>(args)...); }, \
      [](auto&&... args) { return ::gloo_lite::i##name(std::forward<decltype(args)>(args)...); })

// The forms of the Context member `name` and its non-blocking twin `iname` (send, isend).
#define GLOO_LITE_MEMBER_FORMS(name)                             \
  ::gloo_lite::python::forms(                                    \
      [](::gloo_lite::Context& c, auto&&... args) {              \
        c.name(std::forward<decltype(args)>(args)...);           \
      },                                                         \
      [](::gloo_lite::Context& c, auto&&... args) {              \
        return c.i##name(std::forward<decltype(args)>(args)...); \
      })
