#include "tools/launcher_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gloo_lite::launcher {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

void make_pipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw SpawnError("pipe2", errno);
  read_end->reset(fds[0]);
  write_end->reset(fds[1]);
}

// Runs in the forked child of a process that may have threads: async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t launcher, int stdin_fd, int out_fd, int err_fd, int status_fd,
                             const char* path, char* const* argv, char* const* sh_argv,
                             char* const* envp, const std::vector<int>& default_signals) {
  setpgid(0, 0);
  // The ranks must not outlive a launcher that is killed outright.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(127);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);
  for (size_t i = 0; i < default_signals.size(); ++i) sigaction(default_signals[i], &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (dup2(stdin_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
    int error = errno;
    (void)!write(status_fd, &error, sizeof(error));
    _exit(127);
  }
  execve(path, argv, envp);
  // Like execvp: a file without a #! line is a shell script.
  if (errno == ENOEXEC) execve("/bin/sh", sh_argv, envp);
  int error = errno;
  (void)!write(status_fd, &error, sizeof(error));
  _exit(127);
}

}  // namespace

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return name;
  const char* env_path = std::getenv("PATH");
  std::string path = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(start, colon - start);
    start = colon + 1;
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat info;
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

SpawnedRank spawn_rank(const SpawnSpec& spec) {
  SpawnedRank rank;
  Fd out_write, err_write, status_read, status_write;
  make_pipe(&rank.out, &out_write);
  make_pipe(&rank.err, &err_write);
  make_pipe(&status_read, &status_write);
  Fd stdin_fd(spec.inherit_stdin ? fcntl(0, F_DUPFD_CLOEXEC, 3)
                                 : open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!stdin_fd.valid()) throw SpawnError("cannot open standard input for the rank", errno);

  std::vector<std::string> sh_args = {"/bin/sh", spec.path};
  sh_args.insert(sh_args.end(), spec.argv.begin() + 1, spec.argv.end());
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> sh_argv = c_strings(sh_args);
  std::vector<char*> envp = c_strings(spec.env);

  pid_t launcher = getpid();
  pid_t pid = fork();
  if (pid < 0) throw SpawnError("fork", errno);
  if (pid == 0) {
    exec_child(launcher, stdin_fd.get(), out_write.get(), err_write.get(), status_write.get(),
               spec.path.c_str(), argv.data(), sh_argv.data(), envp.data(), spec.default_signals);
  }
  // Also here, so that the group exists before we could ever signal it.
  setpgid(pid, pid);
  rank.pid = pid;
  out_write.reset();
  err_write.reset();
  status_write.reset();

  // EOF on the status pipe means execve succeeded (the pipe is close-on-exec).
  int error = 0;
  ssize_t n;
  do {
    n = read(status_read.get(), &error, sizeof(error));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(error))) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw SpawnError("cannot execute " + spec.path, error);
  }
  set_nonblocking(rank.out.get(), true);
  set_nonblocking(rank.err.get(), true);
  return rank;
}

}  // namespace gloo_lite::launcher
