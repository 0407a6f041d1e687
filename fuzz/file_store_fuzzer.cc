// Fuzzes the file store's records (rendezvous/file_store.cc): the key -> file name encoding and
// the value files, which any process sharing the directory (or a damaged disk) may have written.
// Each input names a key and the bytes found in its value file; the target writes that file
// the way another rank would, then reads it back through a real file store on /dev/shm.
// Input: key length u8 | key | delta (8 bytes) | the value file's contents.
// Invariants: file names use only [A-Za-z0-9._%-] with a kind prefix and decode back to the
// key; get() returns the file's bytes exactly; add() is StoreError for a value that is not a
// strict decimal int64 or a sum that overflows (the file is left as it was), else the sum,
// stored as decimal text; erase() removes the key once.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "gloo_lite/base/error.h"
#include "rendezvous/file_store_names.h"
#include "rendezvous/stores.h"

using gloo_lite::Bytes;
using gloo_lite::Deadline;
using gloo_lite::fuzz::Input;
using gloo_lite::store_detail::FileKeyPaths;

namespace {

const std::string& root() {
  static const std::string path = [] {
    std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string dir = base + "/gloo_lite_fuzz_file_store." + std::to_string(getpid());
    std::filesystem::remove_all(dir);
    return dir;
  }();
  return path;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Checks one path component ("k.", "l." or "d." + encoded bytes) and appends what it decodes to.
void decode_component(const std::string& name, const char* kind, std::string* key) {
  FUZZ_CHECK(name.size() >= 2 && name.compare(0, 2, kind) == 0);
  for (size_t i = 2; i < name.size(); ++i) {
    char c = name[i];
    if (c == '%') {
      FUZZ_CHECK(i + 2 < name.size());
      int high = hex_value(name[i + 1]), low = hex_value(name[i + 2]);
      FUZZ_CHECK(high >= 0 && low >= 0);
      key->push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else {
      FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
      key->push_back(c);
    }
  }
}

void check_names(const std::string& key, const FileKeyPaths& paths) {
  std::string decoded;
  std::string parent = root();
  for (const auto& dir : paths.directories) {
    FUZZ_CHECK(dir.compare(0, parent.size() + 1, parent + "/") == 0);
    std::string name = dir.substr(parent.size() + 1);
    FUZZ_CHECK(name.find('/') == std::string::npos && name.size() < 255);
    decode_component(name, "d.", &decoded);
    parent = dir;
  }
  FUZZ_CHECK(paths.parent == parent);
  FUZZ_CHECK(paths.value.compare(0, parent.size() + 1, parent + "/") == 0);
  std::string value_name = paths.value.substr(parent.size() + 1);
  FUZZ_CHECK(value_name.find('/') == std::string::npos && value_name.size() < 255);
  FUZZ_CHECK(paths.lock == parent + "/l." + value_name.substr(2));
  decode_component(value_name, "k.", &decoded);
  FUZZ_CHECK(decoded == key);
}

// What another process sharing the directory leaves: the value file with these bytes.
void write_record(const FileKeyPaths& paths, const uint8_t* data, size_t size) {
  for (const auto& dir : paths.directories) {
    FUZZ_CHECK(::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST);
  }
  int fd = ::open(paths.value.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(::write(fd, data, size) == static_cast<ssize_t>(size));
  ::close(fd);
}

// Independent of counter.cc: a strict decimal int64 ('-' optional, digits only, in range), of
// at most 20 characters (INT64_MIN's length; longer text is refused even with leading zeros).
bool reference_int64(const Bytes& text, int64_t* out) {
  if (text.size() > 20) return false;
  size_t digits_at = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == digits_at) return false;
  __int128 value = 0;
  for (size_t i = digits_at; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
    if (value > (__int128{1} << 63)) return false;
  }
  if (digits_at == 1) value = -value;
  if (value > INT64_MAX || value < INT64_MIN) return false;
  *out = static_cast<int64_t>(value);
  return true;
}

void remove_key_files(const FileKeyPaths& paths) {
  ::unlink(paths.value.c_str());
  ::unlink(paths.lock.c_str());
  for (auto dir = paths.directories.rbegin(); dir != paths.directories.rend(); ++dir) {
    ::rmdir(dir->c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::shared_ptr<gloo_lite::Store> store = gloo_lite::make_file_store(root());
  Input input(data, size);
  size_t key_bytes = input.byte();
  const uint8_t* key_data = input.take(key_bytes);
  if (key_data == nullptr) return 0;
  std::string key(reinterpret_cast<const char*>(key_data), key_bytes);
  auto delta = static_cast<int64_t>(input.u64());
  size_t value_bytes = input.left();
  Bytes value(input.take(value_bytes), data + size);

  FileKeyPaths paths = gloo_lite::store_detail::file_key_paths(root(), key);
  check_names(key, paths);
  write_record(paths, value.data(), value.size());

  auto soon = [] { return Deadline::after(std::chrono::milliseconds(1000)); };
  FUZZ_CHECK(store->check({key}));
  FUZZ_CHECK(store->get(key, soon()) == value);

  int64_t current = 0, sum = 0;
  bool addable = reference_int64(value, &current) && !__builtin_add_overflow(current, delta, &sum);
  try {
    int64_t got = store->add(key, delta);
    FUZZ_CHECK(addable && got == sum);
    FUZZ_CHECK(store->get(key, soon()) == gloo_lite::to_bytes(std::to_string(sum)));
  } catch (const gloo_lite::StoreError&) {
    FUZZ_CHECK(!addable);
    FUZZ_CHECK(store->get(key, soon()) == value);
  }

  FUZZ_CHECK(store->erase(key));
  FUZZ_CHECK(!store->check({key}));
  FUZZ_CHECK(!store->erase(key));
  remove_key_files(paths);
  return 0;
}
