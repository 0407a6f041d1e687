#include "gloo_lite/flight_signal.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/live_contexts.h"

namespace gloo_lite {
namespace {

constexpr const char* kKnob = "GLOO_LITE_FLIGHT_SIGNAL";

// Never destroyed: the dumper thread may still run while the process exits, and a context
// destroyed by a static destructor still unregisters.
struct State {
  std::mutex mutex;                            // guards everything below
  std::vector<const ContextEngine*> contexts;  // live ones, in registration order
  pid_t installed_in = 0;                      // the process that read the knob (0: none yet)
  int signal = 0;                              // 0: off
  int read_fd = -1;
};

State& state() {
  static State* instance = new State;
  return *instance;
}

// The write end of the self-pipe, for the handler (-1: nothing to wake). Lock-free, so safe to
// read in a signal handler.
std::atomic<int> g_write_fd{-1};
static_assert(std::atomic<int>::is_always_lock_free);

void on_signal(int) {
  int saved = errno;
  int fd = g_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    // Non-blocking: with the pipe full a dump is pending anyway.
    char byte = 1;
    ssize_t ignored = ::write(fd, &byte, 1);
    (void)ignored;
  }
  errno = saved;
}

[[noreturn]] void reject(const std::string& value) {
  throw InvalidArgument(std::string(kKnob) + "='" + value +
                        "' is not a signal it allows; allowed: empty or off (no dumps), USR1, "
                        "USR2, RTMIN+n (SIG prefix optional, any case) or the number of one of "
                        "those (" +
                        std::to_string(SIGUSR1) + ", " + std::to_string(SIGUSR2) + ", " +
                        std::to_string(SIGRTMIN) + ".." + std::to_string(SIGRTMAX) +
                        " here) (see gloo_lite_run --knobs)");
}

bool allowed_signal(long sig) {
  return sig == SIGUSR1 || sig == SIGUSR2 || (sig >= SIGRTMIN && sig <= SIGRTMAX);
}

// Digits only, at most 3 of them (no sign, no overflow).
bool small_number(const std::string& text, long* out) {
  if (text.empty() || text.size() > 3) return false;
  if (!std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return false;
  }
  *out = std::stol(text);
  return true;
}

// The dumper: blocked in read() until the handler writes; one dump per wake-up, however many
// signals came meanwhile. Ends when the pipe is closed (a forked child's copy) or fails.
void dumper(int read_fd, int sig) {
  const std::string why = flight_signal_name(sig) + " (" + kKnob + ")";
  char bytes[64];
  while (true) {
    ssize_t n = ::read(read_fd, bytes, sizeof(bytes));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    dump_live_contexts(why);
  }
}

// A forked child has no dumper thread and must not wake its parent's: it forgets the
// parent's pipe and contexts, and installs its own at its first context.
void before_fork() { state().mutex.lock(); }
void after_fork_in_parent() { state().mutex.unlock(); }
void after_fork_in_child() {
  State& s = state();
  int write_fd = g_write_fd.exchange(-1);
  if (write_fd >= 0) ::close(write_fd);
  if (s.read_fd >= 0) ::close(s.read_fd);
  s.read_fd = -1;
  s.contexts.clear();
  s.installed_in = 0;
  s.mutex.unlock();
}

// With the mutex held.
void start_dumper(State& s, int sig) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(std::string(kKnob) + ": cannot create the signal pipe: " + std::strerror(errno));
  }
  ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  // The dumper takes no signal of the process: it inherits a full mask from us.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    std::thread(dumper, fds[0], sig).detach();
  } catch (const std::system_error& e) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(std::string(kKnob) + ": cannot start the dumper thread: " + e.what());
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  s.read_fd = fds[0];
  g_write_fd.store(fds[1]);
}

}  // namespace

int parse_flight_signal(const std::string& value) {
  std::string word;
  for (unsigned char c : value) word += static_cast<char>(std::toupper(c));
  if (word.empty() || word == "OFF") return 0;
  if (word.compare(0, 3, "SIG") == 0) word.erase(0, 3);
  long sig = 0;
  if (word == "USR1") {
    sig = SIGUSR1;
  } else if (word == "USR2") {
    sig = SIGUSR2;
  } else if (word == "RTMIN") {
    sig = SIGRTMIN;
  } else if (word.compare(0, 6, "RTMIN+") == 0) {
    long offset = 0;
    if (!small_number(word.substr(6), &offset)) reject(value);
    sig = SIGRTMIN + offset;
  } else if (!small_number(word, &sig)) {
    reject(value);
  }
  if (!allowed_signal(sig)) reject(value);
  return static_cast<int>(sig);
}

int flight_signal_from_env() { return parse_flight_signal(knob_string(kKnob)); }

std::string flight_signal_name(int sig) {
  if (sig == SIGUSR1) return "SIGUSR1";
  if (sig == SIGUSR2) return "SIGUSR2";
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) return "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  return "signal " + std::to_string(sig);
}

void install_flight_signal() {
  static std::once_flag fork_handlers;
  std::call_once(fork_handlers,
                 [] { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); });
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.installed_in == getpid()) return;
  int sig = flight_signal_from_env();
  s.installed_in = getpid();
  s.signal = sig;
  if (sig == 0) return;
  struct sigaction current;
  sigaction(sig, nullptr, &current);
  bool foreign = (current.sa_flags & SA_SIGINFO) != 0 ||
                 (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN &&
                  current.sa_handler != on_signal);
  if (foreign) {
    LOG_WARN("flight", "the program handles " << flight_signal_name(sig) << " itself; " << kKnob
                                              << " leaves it so: no flight recorder dumps on it");
    return;
  }
  if (g_write_fd.load() < 0) start_dumper(s, sig);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  // Restarted system calls: a dump must not turn a blocked read or write into an error.
  action.sa_flags = SA_RESTART;
  sigaction(sig, &action, nullptr);
  LOG_INFO("flight", "kill -" << flight_signal_name(sig).substr(3) << " " << getpid()
                              << " dumps the flight recorders of this process to stderr");
}

void register_live_context(const ContextEngine* context) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.contexts.push_back(context);
}

void unregister_live_context(const ContextEngine* context) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.contexts.erase(std::remove(s.contexts.begin(), s.contexts.end(), context), s.contexts.end());
}

void dump_live_contexts(const std::string& why) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  // Asked for explicitly: written whatever GLOO_LITE_LOG says, one write per context.
  if (s.contexts.empty()) {
    log_write(LogLevel::kWarn, "flight", why + ": no live context in this process");
  }
  for (const ContextEngine* context : s.contexts) {
    log_write(LogLevel::kWarn, "flight", why + ": " + context->flight_record());
  }
}

}  // namespace gloo_lite
