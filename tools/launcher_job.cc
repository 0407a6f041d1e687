#include "tools/launcher_job.h"

#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/deadline.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/base/tls.h"
#include "gloo_lite/failure_report.h"
#include "gloo_lite/flight_signal.h"
#include "rendezvous/stores.h"
#include "tools/launcher_blame.h"
#include "tools/launcher_output.h"
#include "tools/launcher_spawn.h"

extern char** environ;

namespace gloo_lite::launcher {
namespace {

// Whether process `pid` catches `sig` now (the SigCgt mask of /proc/<pid>/status): a rank that
// has not created its first context, or a wrapper such as `sh -c`, would be killed by it.
bool catches_signal(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    return sig >= 1 && sig <= 64 && ((mask >> (sig - 1)) & 1ULL) != 0;
  }
  return false;
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};
// `kill -USR1 <launcher>` asks every rank for its flight recorder dump: passed on as the
// ranks' GLOO_LITE_FLIGHT_SIGNAL, which the launcher sets to USR1 unless the user set it.
constexpr int kDumpSignal = SIGUSR1;
constexpr const char* kDumpKnob = "GLOO_LITE_FLIGHT_SIGNAL";
constexpr size_t kReadChunk = 64 * 1024;
// Reads of one pipe when its rank has exited: enough for what the pipe buffer held, bounded in
// case a leftover child of the rank keeps writing.
constexpr int kDrainReads = 64;
// Bounds on reading the ranks' failure reports from our own (in-process) store at the end.
constexpr std::chrono::milliseconds kReportConnect{1000};
constexpr std::chrono::milliseconds kReportRead{2000};

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  std::string text = "signal " + std::to_string(sig);
  if (abbrev != nullptr) text += std::string(" (SIG") + abbrev + ")";
  return text;
}

std::string random_job_id() {
  unsigned char bytes[8] = {0};
  if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    auto now = Deadline::Clock::now().time_since_epoch().count();
    std::memcpy(bytes, &now, sizeof(bytes));
    bytes[0] ^= static_cast<unsigned char>(getpid());
  }
  char text[17];
  for (int i = 0; i < 8; ++i) std::snprintf(text + 2 * i, 3, "%02x", bytes[i]);
  return std::string("job-") + text;
}

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000.0)));
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}

// Each rank needs two pipe ends for its whole life; make sure large -n fits.
void raise_fd_limit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

struct Stream {
  Fd fd;
  std::unique_ptr<LineTagger> tagger;
};

struct RankProcess {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // from waitpid
  Stream out, err;
};

enum class StopReason { kNone, kRankFailed, kInterrupted, kTimedOut, kSpawnFailed };

class Job {
 public:
  Job(const LauncherOptions& options, int signal_fd, std::vector<int> forwarded)
      : options_(options),
        signal_fd_(signal_fd),
        forwarded_(std::move(forwarded)),
        ranks_(options.ranks),
        rank_dump_signal_(std::getenv(kDumpKnob) ? flight_signal_from_env() : kDumpSignal) {}

  int run();

 private:
  std::vector<std::string> rank_environment(int rank) const;
  void start_ranks();
  void loop();
  void read_stream(Stream& stream, int max_reads);
  void handle_signals();
  void forward_dump_request();
  void reap();
  void on_exit(RankProcess& process, int status);
  void stop(StopReason reason, int sig);
  void kill_running(int sig);
  int exit_status();
  std::string running_ranks() const;
  void find_suspects();
  std::string blame(int first_failed);

  const LauncherOptions& options_;
  int signal_fd_;
  std::vector<int> forwarded_;  // the signals we catch and pass on; the ranks get them at default
  std::vector<RankProcess> ranks_;
  int rank_dump_signal_;  // the ranks' GLOO_LITE_FLIGHT_SIGNAL (0: off)
  std::unique_ptr<TcpStoreServer> server_;
  std::string store_url_;
  std::string job_id_;
  bool loopback_only_ = false;
  int running_ = 0;

  StopReason reason_ = StopReason::kNone;
  int failed_rank_ = -1;
  int interrupt_signal_ = 0;
  std::string spawn_error_;
  int spawn_status_ = 0;
  bool stopping_ = false;
  std::string stopped_;                // ranks still running when the stop began
  std::vector<SuspectRank> suspects_;  // running ranks found stopped or stuck when it began
  std::vector<int> failed_ranks_;      // exited with a non-zero status (not killed by a signal)
  std::optional<Deadline> job_deadline_;
  std::optional<Deadline> kill_deadline_;  // while stopping, until SIGKILL is sent
};

std::vector<std::string> Job::rank_environment(int rank) const {
  auto ours = [&](const std::string& entry) {
    for (const char* name : {"GLOO_LITE_RANK=", "GLOO_LITE_SIZE=", "GLOO_LITE_LOCAL_RANK=",
                             "GLOO_LITE_STORE=", "GLOO_LITE_FLIGHT_SIGNAL="}) {
      if (entry.compare(0, std::strlen(name), name) == 0) return true;
    }
    return options_.set_prefix && entry.compare(0, 17, "GLOO_LITE_PREFIX=") == 0;
  };
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!ours(*entry)) env.emplace_back(*entry);
  }
  env.push_back("GLOO_LITE_RANK=" + std::to_string(rank));
  env.push_back("GLOO_LITE_SIZE=" + std::to_string(options_.ranks));
  env.push_back("GLOO_LITE_LOCAL_RANK=" + std::to_string(rank));
  env.push_back("GLOO_LITE_STORE=" + store_url_);
  if (options_.set_prefix) env.push_back("GLOO_LITE_PREFIX=" + job_id_);
  if (loopback_only_) env.push_back("GLOO_LITE_HOSTNAME=127.0.0.1");
  // The user's value when set (even to off); otherwise the signal we forward.
  if (const char* chosen = std::getenv(kDumpKnob)) {
    env.push_back(std::string(kDumpKnob) + "=" + chosen);
  } else {
    env.push_back(std::string(kDumpKnob) + "=USR1");
  }
  return env;
}

// Starts every rank; when one cannot be started, records why and stops those already running.
void Job::start_ranks() {
  SpawnSpec spec;
  spec.argv = options_.command;
  spec.default_signals = forwarded_;
  spec.path = find_program(options_.command[0]);
  if (spec.path.empty()) {
    spawn_error_ = options_.command[0] + ": command not found";
    spawn_status_ = 127;
    reason_ = StopReason::kSpawnFailed;
    return;
  }
  for (int rank = 0; rank < options_.ranks; ++rank) {
    spec.env = rank_environment(rank);
    spec.inherit_stdin = rank == 0 && !isatty(0);
    RankProcess& process = ranks_[rank];
    process.rank = rank;
    try {
      SpawnedRank spawned = spawn_rank(spec);
      process.pid = spawned.pid;
      process.running = true;
      process.out.fd = std::move(spawned.out);
      process.err.fd = std::move(spawned.err);
    } catch (const SpawnError& e) {
      spawn_error_ =
          std::string(e.what()) + " (rank " + std::to_string(rank) + "): " + std::strerror(e.error);
      spawn_status_ = e.error == ENOENT ? 127 : 126;
      stop(StopReason::kSpawnFailed, SIGTERM);
      return;
    }
    std::string tag = "[" + std::to_string(rank) + "] ";
    process.out.tagger = std::make_unique<LineTagger>(tag, 1);
    process.err.tagger = std::make_unique<LineTagger>(tag, 2);
    ++running_;
  }
}

void Job::read_stream(Stream& stream, int max_reads) {
  char buffer[kReadChunk];
  for (int i = 0; i < max_reads && stream.fd.valid(); ++i) {
    ssize_t n = ::read(stream.fd.get(), buffer, sizeof(buffer));
    if (n > 0) {
      stream.tagger->feed(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    stream.tagger->finish();  // EOF or a read error: the stream is over
    stream.fd.reset();
  }
}

void Job::kill_running(int sig) {
  for (auto& process : ranks_) {
    if (!process.running) continue;
    if (kill(-process.pid, sig) != 0) kill(process.pid, sig);
  }
}

void Job::stop(StopReason reason, int sig) {
  if (!stopping_) {
    stopping_ = true;
    if (reason_ == StopReason::kNone) reason_ = reason;
    stopped_ = running_ranks();
    if (reason == StopReason::kRankFailed || reason == StopReason::kTimedOut) find_suspects();
    kill_running(sig);
    // A stopped rank would hold the signal pending until SIGKILL after the grace period; let it
    // run into the signal now instead.
    for (const auto& suspect : suspects_) {
      if (suspect.state == 'T') kill(-ranks_[suspect.rank].pid, SIGCONT);
    }
    kill_deadline_ = Deadline::after(seconds_to_ms(options_.grace_s));
    LOG_INFO("launcher", "stopping ranks " << stopped_ << " with " << signal_text(sig));
  } else if (kill_deadline_) {
    // Asked again while stopping (a second Ctrl-C): no more grace.
    kill_running(SIGKILL);
    kill_deadline_.reset();
  }
}

void Job::on_exit(RankProcess& process, int status) {
  process.running = false;
  process.status = status;
  --running_;
  // What the rank wrote before exiting is already in its pipes: print it before any summary.
  read_stream(process.out, kDrainReads);
  read_stream(process.err, kDrainReads);
  bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (WIFEXITED(status) && failed) failed_ranks_.push_back(process.rank);
  if (failed && !stopping_) {
    failed_rank_ = process.rank;
    stop(StopReason::kRankFailed, SIGTERM);
  }
}

void Job::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (auto& process : ranks_) {
      if (process.pid == pid && process.running) on_exit(process, status);
    }
  }
}

void Job::handle_signals() {
  signalfd_siginfo info;
  while (::read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
    } else if (sig == kDumpSignal) {
      forward_dump_request();
    } else {
      if (!stopping_) interrupt_signal_ = sig;
      stop(StopReason::kInterrupted, sig);  // forwards the signal itself
    }
  }
}

// Each running rank that catches its dump signal gets it (the rank's process only: what it
// started may not handle it). One that does not (no context yet, a wrapper) would die of it:
// it is left out, and said so.
void Job::forward_dump_request() {
  if (rank_dump_signal_ == 0) {
    LOG_WARN("launcher", "SIGUSR1: the ranks dump no flight recorder ("
                             << kDumpKnob << " is " << std::getenv(kDumpKnob) << "); ignored");
    return;
  }
  LOG_INFO("launcher", "SIGUSR1: sending " << flight_signal_name(rank_dump_signal_) << " to ranks "
                                           << running_ranks()
                                           << " for their flight recorder dumps");
  std::string skipped;
  for (auto& process : ranks_) {
    if (!process.running) continue;
    if (catches_signal(process.pid, rank_dump_signal_)) {
      kill(process.pid, rank_dump_signal_);
    } else {
      skipped += (skipped.empty() ? "" : ",") + std::to_string(process.rank);
    }
  }
  if (!skipped.empty()) {
    LOG_WARN("launcher", "ranks " << skipped << " do not handle "
                                  << flight_signal_name(rank_dump_signal_)
                                  << " (no context created yet, or a wrapper process): not "
                                     "signalled, since it would end them");
  }
}

void Job::loop() {
  std::vector<pollfd> fds;
  std::vector<Stream*> streams;
  while (running_ > 0) {
    fds.assign(1, pollfd{signal_fd_, POLLIN, 0});
    streams.clear();
    for (auto& process : ranks_) {
      for (Stream* stream : {&process.out, &process.err}) {
        if (!stream->fd.valid()) continue;
        fds.push_back(pollfd{stream->fd.get(), POLLIN, 0});
        streams.push_back(stream);
      }
    }
    std::optional<Deadline> next = stopping_ ? kill_deadline_ : job_deadline_;
    int timeout = next ? next->poll_timeout_ms() : -1;
    int ready = poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) {
      throw Error(std::string("poll() failed: ") + std::strerror(errno));
    }
    for (size_t i = 1; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_stream(*streams[i - 1], 1);
    }
    if (ready > 0 && fds[0].revents != 0) handle_signals();
    if (!stopping_ && job_deadline_ && job_deadline_->expired()) {
      stop(StopReason::kTimedOut, SIGTERM);
    } else if (stopping_ && kill_deadline_ && kill_deadline_->expired()) {
      LOG_WARN("launcher", "ranks " << running_ranks() << " outlived the "
                                    << seconds_text(options_.grace_s)
                                    << " grace period; sending SIGKILL");
      kill_running(SIGKILL);
      kill_deadline_.reset();
    }
  }
}

// The other ranks' process states at the first failure: a stopped or stuck rank is what the
// failing ones most likely waited for.
void Job::find_suspects() {
  std::map<pid_t, char> states = process_group_states();
  for (const auto& process : ranks_) {
    if (!process.running) continue;
    auto state = states.find(process.pid);  // each rank leads a process group of its own
    if (state != states.end() && state_is_suspect(state->second)) {
      suspects_.push_back({process.rank, state->second});
    }
  }
}

// The culprit clause of the summary, from the process states and the ranks' failure reports.
std::string Job::blame(int first_failed) {
  BlameEvidence evidence;
  evidence.suspects = suspects_;
  evidence.failed = failed_ranks_;
  try {
    std::shared_ptr<Store> store = open_store(store_url_, Deadline::after(kReportConnect));
    std::string prefix = options_.set_prefix ? job_id_ : env_value("GLOO_LITE_PREFIX").value_or("");
    if (!prefix.empty()) store = make_prefix_store(std::move(store), prefix);
    evidence.reports = read_failure_reports(*store, options_.ranks, Deadline::after(kReportRead));
  } catch (const std::exception& e) {
    LOG_INFO("launcher", "cannot read the ranks' failure reports: " << e.what());
  }
  return blame_clause(first_failed, evidence);
}

std::string Job::running_ranks() const {
  std::string list;
  for (const auto& process : ranks_) {
    if (process.running) list += (list.empty() ? "" : ",") + std::to_string(process.rank);
  }
  return list;
}

int Job::exit_status() {
  std::string stopped =
      stopped_.empty() ? "no other rank was running" : "stopped ranks " + stopped_;
  std::string summary;
  int status = 0;
  switch (reason_) {
    case StopReason::kNone:
      return 0;
    case StopReason::kRankFailed: {
      const RankProcess& failed = ranks_[failed_rank_];
      std::string how;
      if (WIFSIGNALED(failed.status)) {
        status = 128 + WTERMSIG(failed.status);
        how = "was killed by " + signal_text(WTERMSIG(failed.status));
        if (WCOREDUMP(failed.status)) how += " (core dumped)";
      } else {
        status = WEXITSTATUS(failed.status);
        how = "exited with status " + std::to_string(status);
      }
      std::string culprit = blame(failed_rank_);
      summary = "rank " + std::to_string(failed_rank_) + " (pid " + std::to_string(failed.pid) +
                ") " + how + (culprit.empty() ? "" : ", the first to fail; " + culprit) + "; " +
                stopped;
      break;
    }
    case StopReason::kInterrupted:
      status = 128 + interrupt_signal_;
      summary = "interrupted by " + signal_text(interrupt_signal_) + "; " + stopped;
      break;
    case StopReason::kTimedOut:
      status = 124;
      summary = "job exceeded --timeout " + seconds_text(options_.timeout_s) + "; " + stopped;
      if (std::string culprit = blame(-1); !culprit.empty()) summary += "; " + culprit;
      break;
    case StopReason::kSpawnFailed:
      status = spawn_status_;
      summary = spawn_error_ + (stopped_.empty() ? "" : "; " + stopped);
      break;
  }
  write_whole(2, "gloo_lite_run: " + summary + "\n");
  return status;
}

int Job::run() {
  raise_fd_limit();
  try {
    // The TLS knobs, like the user's secret, are checked here: a bad GLOO_LITE_* value is exit
    // status 2 before any rank starts, not a failure of the launcher's store.
    tls::configured_context();
    // The user's secret, when set, is checked here (a group-readable file fails before any
    // rank starts). Otherwise a fresh one goes into our own environment, so that the embedded
    // store server, our own store client and every rank (they inherit it) hold the same one.
    if (!auth::configured_secret() && options_.authenticate) {
      std::string secret = auth::random_secret_text();
      setenv("GLOO_LITE_AUTH_SECRET", secret.c_str(), 1);
      std::fill(secret.begin(), secret.end(), '\0');
    }
  } catch (const InvalidArgument& e) {
    write_whole(2, std::string("gloo_lite_run: ") + e.what() + "\n");
    return 2;
  }
  SocketAddress server_address;
  try {
    server_address = SocketAddress::resolve(options_.host, 0);
    server_ = std::make_unique<TcpStoreServer>(server_address);
  } catch (const std::exception& e) {
    write_whole(2, "gloo_lite_run: cannot start the TCP store on " + options_.host + ": " +
                       e.what() + "\n");
    return 1;
  }
  store_url_ = server_->url();
  // Every rank runs on this host, so with the store on loopback the ranks connect over loopback
  // too, unless the user chose an address or interface.
  loopback_only_ = server_address.is_loopback() && !env_value("GLOO_LITE_HOSTNAME") &&
                   !env_value("GLOO_LITE_IFNAME");
  job_id_ = random_job_id();
  if (options_.timeout_s > 0) job_deadline_ = Deadline::after(seconds_to_ms(options_.timeout_s));
  LOG_INFO("launcher",
           job_id_ << ": starting " << options_.ranks << " ranks, store " << store_url_);
  start_ranks();
  loop();
  // Every rank has exited; print what is left in the pipes (not waiting for EOF, which a
  // leftover child of a rank could hold off forever).
  for (auto& process : ranks_) {
    for (Stream* stream : {&process.out, &process.err}) {
      if (!stream->fd.valid()) continue;
      read_stream(*stream, kDrainReads);
      if (stream->tagger) stream->tagger->finish();
      stream->fd.reset();
    }
  }
  return exit_status();
}

}  // namespace

int run_job(const LauncherOptions& options) {
  // Block before any thread exists (the store server starts one), so signals reach only the
  // signalfd. The children get an empty mask back before exec. A signal we were started with
  // ignored (nohup, a shell's background job) stays ignored, for us and for the ranks.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  std::vector<int> forwarded;
  for (int sig : kForwarded) {
    struct sigaction current;
    if (sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&mask, sig);
    forwarded.push_back(sig);
  }
  struct sigaction dump;
  if (sigaction(kDumpSignal, nullptr, &dump) == 0 && dump.sa_handler != SIG_IGN) {
    sigaddset(&mask, kDumpSignal);
  }
  if (sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) {
    write_whole(2, std::string("gloo_lite_run: sigprocmask: ") + std::strerror(errno) + "\n");
    return 1;
  }
  // A closed stdout must not kill the launcher while ranks still run.
  signal(SIGPIPE, SIG_IGN);
  Fd signal_fd(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd.valid()) {
    write_whole(2, std::string("gloo_lite_run: signalfd: ") + std::strerror(errno) + "\n");
    return 1;
  }
  Job job(options, signal_fd.get(), std::move(forwarded));
  return job.run();
}

}  // namespace gloo_lite::launcher
