// Blocking gloo_lite calls from Python: the GIL is released while C++ works, and Ctrl-C
// interrupts them. Two mechanisms, because the C++ non-blocking forms may or may not return
// before the work is done:
//  - waits happen in slices (kSlice) with PyErr_CheckSignals between them, so a Python signal
//    handler's exception (KeyboardInterrupt) ends the wait within a slice;
//  - while a call runs on the main thread, a SIGINT handler chained in front of Python's wakes
//    a watcher thread that fails the context, so that a C++ call blocked inside (a synchronous
//    "non-blocking" form, split) returns at once too.
// Either way the context fails with "interrupted by SIGINT (Ctrl-C) during <call>" (its peers
// learn that reason) and the call raises KeyboardInterrupt: a collective left halfway on one
// rank cannot be resumed, so the context is not usable afterwards.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <vector>

#include "buffer.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/context.h"
#include "gloo_lite/work.h"

namespace gloo_lite::python {

namespace nb = nanobind;

// Call once at import, on the main thread.
void init_interrupts();

// While alive (on the main thread, when a Python-level SIGINT handler is installed), SIGINT
// fails `context`, naming `what`. The first scope chains a handler in front of Python's, which
// then stays; each scope costs one sigaction query (to notice a handler Python installed
// since) and arms it.
class InterruptScope {
 public:
  InterruptScope(const std::shared_ptr<Context>& context, const char* what);
  ~InterruptScope();
  // Whether SIGINT fails the context while this scope lives.
  bool active() const { return installed_; }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  bool installed_ = false;
};

// Whether this is the thread Python runs signal handlers on.
bool on_main_thread();

// Raises (nb::python_error) the exception that interrupted this thread's call: one a Python
// callback raised (held by callback_raised), else that of a pending signal handler, if any.
void raise_if_signalled();

// Whether this thread must not take the GIL (again): the interpreter is finalizing and this is
// not the thread that finalizes it. Python 3.11 - 3.13 end such a thread in pthread_exit(), a
// forced unwind through our C++ frames that the first noexcept one (a GIL guard's destructor)
// turns into std::terminate(): a daemon thread in a call at exit aborted the process.
bool interpreter_exiting();

// nb::gil_scoped_release for every blocking gloo_lite call: the GIL is released for its
// lifetime and taken back at its end, unless interpreter_exiting(), when the thread parks for
// good instead (as Python 3.14 parks it; it holds no lock then, and the process exits around
// it).
class GilReleased {
 public:
  GilReleased() : state_(PyEval_SaveThread()) {}
  ~GilReleased();
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  PyThreadState* state_;
};

// A Python callback called from C++ (a custom reduction of `call`) raised `error`: throws the
// gloo_lite::Error that fails the call. An exception that is not an Exception (KeyboardInterrupt
// from Ctrl-C, SystemExit, what signal handlers raise) is held for this thread's call to raise
// in its place (raise_if_signalled) when this is the main thread, which runs signal handlers.
[[noreturn]] void callback_raised(nb::python_error& error, const char* call);

// Runs `body` with the GIL released. A gloo_lite error it throws is reported as the exception
// that interrupted it when there is one (Ctrl-C caused it), as itself otherwise.
template <typename F>
auto released(F&& body) -> decltype(body()) {
  try {
    GilReleased release;
    return body();
  } catch (const gloo_lite::Error&) {
    raise_if_signalled();
    throw;
  }
}

// Waits for `work` with the GIL released, at most `timeout` seconds (none: until it finishes).
// True: finished (its error is thrown if it failed); false: still running. On a signal whose
// handler raised, fails the context, gives the work a moment to finish and raises that
// exception; buffers of work that still runs then are moved out of `keep` and never released.
bool wait_work(const std::shared_ptr<Context>& context, const Work& work, const char* what,
               std::optional<double> timeout, std::vector<Buffer>* keep);

}  // namespace gloo_lite::python
