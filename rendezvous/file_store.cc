// The file store: one file per key in a directory that every rank can reach (local disk, or NFS
// across hosts). Writers publish by write-to-temporary + rename(), which readers observe
// atomically, whole or not at all. NFS's close-to-open consistency makes a file renamed into
// place visible, complete, to any later open() on another client.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "rendezvous/counter.h"
#include "rendezvous/file_store_names.h"
#include "rendezvous/store_util.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

using store_detail::FileKeyPaths;

std::string errno_text() { return std::strerror(errno); }

// Pauses between checks for a key. On a local file system inotify wakes the waiter as soon as a
// value is renamed into place. Writes by other NFS clients raise no inotify event, so the pause
// still ends on a doubling backoff (0.5 ms up to 50 ms): a remote write is seen within ~50 ms,
// and a long wait costs ~20 checks a second instead of 100 with fixed 10 ms polling.
class ChangeWaiter {
 public:
  explicit ChangeWaiter(const std::string& directory)
      : backoff_(std::chrono::microseconds(500), std::chrono::milliseconds(50)) {
    inotify_.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (inotify_.valid() && inotify_add_watch(inotify_.get(), directory.c_str(), IN_MOVED_TO) < 0) {
      inotify_.reset();
    }
  }

  void pause(const Deadline& deadline) {
    auto pause = backoff_.next(deadline);
    if (!inotify_.valid()) {
      std::this_thread::sleep_for(pause);
      return;
    }
    timespec timeout{static_cast<time_t>(pause.count() / 1000000),
                     static_cast<long>(pause.count() % 1000000) * 1000};
    pollfd p{inotify_.get(), POLLIN, 0};
    if (ppoll(&p, 1, &timeout, nullptr) > 0) {
      alignas(inotify_event) char events[4096];
      while (::read(inotify_.get(), events, sizeof(events)) > 0) {
      }
    }
  }

 private:
  Backoff backoff_;
  Fd inotify_;
};

std::optional<Bytes> read_value(const std::string& path, const std::string& store) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    throw StoreError(store + ": cannot open " + path + ": " + errno_text());
  }
  struct stat info {};
  size_t expected = 0;
  if (fstat(fd.get(), &info) == 0 && info.st_size > 0) expected = static_cast<size_t>(info.st_size);
  // Read to EOF rather than trusting st_size, which NFS attribute caching may leave stale.
  Bytes value(expected + 1);
  size_t got = 0;
  while (true) {
    if (got == value.size()) value.resize(value.size() * 2);
    ssize_t n = ::read(fd.get(), value.data() + got, value.size() - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      throw StoreError(store + ": cannot read " + path + ": " + errno_text());
    }
  }
  value.resize(got);
  return value;
}

bool exists(const std::string& path, const std::string& store) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  throw StoreError(store + ": cannot stat " + path + ": " + errno_text());
}

void write_file(const std::string& path, const Bytes& value, const std::string& store) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) throw StoreError(store + ": cannot create " + path + ": " + errno_text());
  size_t done = 0;
  while (done < value.size()) {
    ssize_t n = ::write(fd.get(), value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw StoreError(store + ": cannot write " + path + ": " + errno_text());
    done += static_cast<size_t>(n);
  }
  // NFS reports deferred write errors at close(), so its result matters.
  if (::close(fd.release()) != 0) {
    throw StoreError(store + ": cannot write " + path + ": " + errno_text());
  }
}

class FileStore final : public Store {
 public:
  explicit FileStore(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    name_ = "file://" + root_;
    std::error_code error;
    std::filesystem::create_directories(root_, error);
    if (!std::filesystem::is_directory(root_)) {
      throw StoreError(name_ + ": cannot create the store directory" +
                       (error ? ": " + error.message() : std::string()));
    }
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    std::random_device random;
    uint64_t nonce = (static_cast<uint64_t>(random()) << 32) ^ random();
    // Unique across hosts sharing the directory, processes (also forked ones) and threads.
    temp_stem_ = root_ + "/t." + host + "." + std::to_string(nonce) + ".";
  }

  // A file system that hangs (a dead NFS server) blocks open/write/rename in the kernel, where no
  // deadline reaches; the waits and the counter lock below are what a deadline can bound.
  void set(const std::string& key, const Bytes& value, const Deadline& /*deadline*/) override {
    FileKeyPaths paths = paths_of(key);
    make_directories(paths);
    publish(paths.value, value);
  }

  Bytes get(const std::string& key, const Deadline& deadline) override {
    FileKeyPaths paths = paths_of(key);
    if (auto value = read_value(paths.value, name_)) return std::move(*value);
    auto started = Deadline::Clock::now();
    ChangeWaiter waiter(watched_directory(paths));
    while (true) {
      if (auto value = read_value(paths.value, name_)) return std::move(*value);
      if (deadline.expired()) store_detail::throw_key_timeout(name_, {key}, started);
      waiter.pause(deadline);
    }
  }

  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override {
    auto started = Deadline::Clock::now();
    for (const auto& key : keys) {
      FileKeyPaths paths = paths_of(key);
      if (exists(paths.value, name_)) continue;
      ChangeWaiter waiter(watched_directory(paths));
      while (!exists(paths.value, name_)) {
        if (deadline.expired()) store_detail::throw_key_timeout(name_, missing(keys), started);
        waiter.pause(deadline);
      }
    }
  }

  // flock() excludes other open file descriptions of the lock file: other processes, other
  // hosts (Linux NFS clients map it to a whole-file NFS lock) and other threads of this process,
  // since each add() opens the lock file anew. The lock dies with its holder, so a crashed rank
  // cannot wedge the counter; a stopped one can, hence the deadline.
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) override {
    FileKeyPaths paths = paths_of(key);
    if (delta == 0 && !read_value(paths.value, name_)) {
      // Reading a counter that does not exist: 0, and no files made for it. Context's catch-up
      // reads every peer's counter this way; creating them left a lock and a value file per
      // absent rank, 2 x size in all. A counter that exists takes the path below, which also
      // writes its value back in its canonical form, as the other stores' add does.
      return 0;
    }
    make_directories(paths);
    Fd lock(::open(paths.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!lock.valid()) {
      throw StoreError(name_ + ": cannot open lock file " + paths.lock + ": " + errno_text());
    }
    lock_before(lock, paths.lock, key, deadline);
    std::optional<Bytes> current = read_value(paths.value, name_);
    int64_t sum = store_detail::add_to_counter(current ? &*current : nullptr, delta, key, name_);
    publish(paths.value, store_detail::format_counter(sum));
    return sum;
  }

  bool check(const std::vector<std::string>& keys, const Deadline& /*deadline*/) override {
    return missing(keys).empty();
  }

  // The lock file stays: removing it while another add() holds or awaits the lock would let a
  // third process lock a fresh file and break mutual exclusion.
  bool erase(const std::string& key, const Deadline& /*deadline*/) override {
    FileKeyPaths paths = paths_of(key);
    if (::unlink(paths.value.c_str()) == 0) return true;
    if (errno == ENOENT || errno == ENOTDIR) return false;
    throw StoreError(name_ + ": cannot remove " + paths.value + ": " + errno_text());
  }

  std::string describe() const override { return name_; }

 private:
  FileKeyPaths paths_of(const std::string& key) const {
    return store_detail::file_key_paths(root_, key);
  }

  // Long keys live in subdirectories that may not exist yet; watch the root for those and let
  // the backoff catch their writes.
  const std::string& watched_directory(const FileKeyPaths& paths) const {
    return paths.directories.empty() ? root_ : paths.parent;
  }

  std::vector<std::string> missing(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& key : keys) {
      if (!exists(paths_of(key).value, name_)) out.push_back(key);
    }
    return out;
  }

  // The holder of a counter's lock keeps it for one read and one write; a lock held until the
  // deadline means a process stopped (or hung on the file system) while holding it.
  void lock_before(const Fd& lock, const std::string& path, const std::string& key,
                   const Deadline& deadline) const {
    auto started = Deadline::Clock::now();
    Backoff backoff(std::chrono::microseconds(100), std::chrono::milliseconds(20));
    while (flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) {
        throw StoreError(name_ + ": cannot lock " + path + ": " + errno_text());
      }
      if (!backoff.sleep(deadline) || deadline.expired()) {
        auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - started);
        throw StoreError(name_ + ": add(" + store_detail::quote_key(key) + ") could not lock " +
                         path + " within " + format_ms(waited) +
                         "; another process holds it: is one stopped (SIGSTOP, a debugger) or "
                         "hung on the file system while adding to this counter?");
      }
    }
  }

  void make_directories(const FileKeyPaths& paths) const {
    for (const auto& dir : paths.directories) {
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        throw StoreError(name_ + ": cannot create " + dir + ": " + errno_text());
      }
    }
  }

  void publish(const std::string& target, const Bytes& value) {
    std::string temp =
        temp_stem_ + std::to_string(getpid()) + "." + std::to_string(temp_counter_.fetch_add(1));
    try {
      write_file(temp, value, name_);
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
    if (::rename(temp.c_str(), target.c_str()) != 0) {
      std::string reason = errno_text();
      ::unlink(temp.c_str());
      throw StoreError(name_ + ": cannot rename " + temp + " to " + target + ": " + reason);
    }
  }

  std::string root_;
  std::string name_;
  std::string temp_stem_;
  std::atomic<uint64_t> temp_counter_{0};
};

}  // namespace

std::shared_ptr<Store> make_file_store(const std::string& directory) {
  if (directory.empty()) throw InvalidArgument("make_file_store: empty directory");
  return std::make_shared<FileStore>(directory);
}

}  // namespace gloo_lite
