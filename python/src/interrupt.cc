// Ctrl-C during blocking calls (see interrupt.h).
#include "interrupt.h"

#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite::python {
namespace {

constexpr std::chrono::milliseconds kSlice{50};
// How long an interrupted call's work may take to end after its context failed, before its
// buffers are abandoned rather than released under it.
constexpr std::chrono::milliseconds kAbandonAfter{5000};

unsigned long main_thread_id = 0;

// The call in flight on the main thread, for the watcher.
std::mutex inflight_mutex;
std::shared_ptr<Context> inflight_context;
const char* inflight_what = "";

sem_t wake;                       // posted by the handler (sem_post is async-signal-safe)
struct sigaction python_handler;  // Python's, saved while ours is installed
std::atomic<bool> armed{false};

void on_sigint(int signal, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  if (armed.load(std::memory_order_relaxed)) sem_post(&wake);
  errno = saved_errno;
  if (python_handler.sa_flags & SA_SIGINFO) {
    python_handler.sa_sigaction(signal, info, ucontext);
  } else if (python_handler.sa_handler != SIG_DFL && python_handler.sa_handler != SIG_IGN) {
    python_handler.sa_handler(signal);
  }
}

void watch() {
  for (;;) {
    while (sem_wait(&wake) != 0) {
    }
    std::shared_ptr<Context> context;
    std::string what;
    {
      std::lock_guard<std::mutex> lock(inflight_mutex);
      context = inflight_context;
      what = inflight_what;
    }
    if (context) context->fail("interrupted by SIGINT (Ctrl-C) during " + what);
  }
}

// The exception a Python callback raised on this thread in place of its call's error (see
// callback_raised): plain pointers, so that no destructor runs at a thread's exit without the
// GIL; only the main thread holds one, and raise_if_signalled hands it back.
struct HeldException {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
};
thread_local HeldException held;

[[noreturn]] void park_forever() {
  // Signals go to the other threads: this one never runs a handler again.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) pause();
}

std::string interruption_reason(const char* what) {
  if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
    return std::string("interrupted by SIGINT (Ctrl-C) during ") + what;
  }
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  std::string name = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "an exception";
  PyErr_Restore(type, value, traceback);
  return std::string("interrupted during ") + what + " by " + name + " from a signal handler";
}

// Holds the Python exception a signal handler raised, fails the context, lets the work end,
// and throws the exception.
[[noreturn]] void interrupted(const std::shared_ptr<Context>& context, const Work& work,
                              const char* what, std::vector<Buffer>* keep) {
  const std::string reason = interruption_reason(what);
  nb::python_error pending;  // fetched: the error indicator is clear while we wait below
  bool finished;
  {
    GilReleased release;
    context->fail(reason);
    try {
      finished = work.wait(kAbandonAfter);
    } catch (...) {
      finished = true;
    }
  }
  if (!finished && keep != nullptr) {
    // The C++ side may still write into these: never release them.
    static auto* abandoned = new std::vector<Buffer>();
    for (Buffer& buffer : *keep) abandoned->push_back(std::move(buffer));
    keep->clear();
  }
  throw pending;
}

}  // namespace

void init_interrupts() {
  // Python runs signal handlers on its main thread only (which need not be the importing one).
  nb::object main_thread = nb::module_::import_("threading").attr("main_thread")();
  main_thread_id = nb::cast<unsigned long>(main_thread.attr("ident"));
  sem_init(&wake, 0, 0);
  std::thread(watch).detach();
}

bool on_main_thread() { return PyThread_get_thread_ident() == main_thread_id; }

InterruptScope::InterruptScope(const std::shared_ptr<Context>& context, const char* what) {
  if (!on_main_thread()) return;
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  const bool ours = (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sigint;
  if (!ours) {
    // Python's handler (or the user's, through signal.signal) is in place: put ours in front
    // of it, once; it stays (disarmed between calls it only forwards) until Python installs
    // another, which the query above notices. SIG_DFL and SIG_IGN are left alone.
    if (!(current.sa_flags & SA_SIGINFO) &&
        (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
      return;
    }
    python_handler = current;
    struct sigaction chained = current;
    chained.sa_flags |= SA_SIGINFO;
    chained.sa_sigaction = on_sigint;
    if (sigaction(SIGINT, &chained, nullptr) != 0) return;
  }
  {
    std::lock_guard<std::mutex> lock(inflight_mutex);
    inflight_context = context;
    inflight_what = what;
  }
  armed.store(true);
  installed_ = true;
}

InterruptScope::~InterruptScope() {
  if (!installed_) return;
  armed.store(false);
  std::lock_guard<std::mutex> lock(inflight_mutex);
  inflight_context.reset();
}

bool interpreter_exiting() {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  // The main thread is the one that finalizes: it must get the GIL back.
  return finalizing && !on_main_thread();
}

GilReleased::~GilReleased() {
  if (interpreter_exiting()) park_forever();
  PyEval_RestoreThread(state_);
}

void callback_raised(nb::python_error& error, const char* call) {
  if (!on_main_thread() || error.matches(PyExc_Exception)) {
    throw gloo_lite::Error(std::string(call) + ": the custom reduction raised " + error.what());
  }
  error.restore();
  const std::string reason = interruption_reason(call) + " (in its custom reduction)";
  Py_XDECREF(held.type);  // one that no call raised (none normally: the first one fails it)
  Py_XDECREF(held.value);
  Py_XDECREF(held.traceback);
  PyErr_Fetch(&held.type, &held.value, &held.traceback);
  throw gloo_lite::Error(reason);
}

void raise_if_signalled() {
  if (held.type != nullptr) {
    PyErr_Restore(held.type, held.value, held.traceback);
    held = {};
    throw nb::python_error();
  }
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
}

bool wait_work(const std::shared_ptr<Context>& context, const Work& work, const char* what,
               std::optional<double> timeout, std::vector<Buffer>* keep) {
  // In a forked child nothing would ever finish the parent's work.
  context->require_creating_process(what);
  // No timeout, inf or any amount past the clock's range: until done (Deadline::never()).
  const Deadline until =
      timeout ? Deadline::after(milliseconds_from_seconds(*timeout, "Work.wait: timeout"))
              : Deadline::never();
  for (;;) {
    bool finished = false;
    std::exception_ptr error;
    {
      GilReleased release;
      const auto slice = std::min<std::chrono::milliseconds>(kSlice, until.remaining());
      try {
        finished = work.wait(slice);
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) {
      raise_if_signalled();  // the failure came from Ctrl-C: report that
      std::rethrow_exception(error);
    }
    // A signal after success is left for Python to raise at its next check.
    if (finished) return true;
    if (PyErr_CheckSignals() != 0) interrupted(context, work, what, keep);
    if (until.expired()) return false;
  }
}

}  // namespace gloo_lite::python
