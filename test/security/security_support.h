// Helpers for the security tests: environment and stderr redirection scoped to a test or a
// forked rank, files read whole, and the TCP device every test rank uses.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "gloo_lite/base/socket.h"
#include "rendezvous/store.h"

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::test {

// Secrets of at least auth::kMinSecretBytes; two different ones.
constexpr const char* kSecret = "correct horse battery staple 4f9a";
constexpr const char* kOtherSecret = "incorrect mule battery staple 77e1";

// Sets NAME (or unsets it, for nullptr) until destruction, then restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Sends this process's stderr (fd 2) to `path` until destruction (or, in a forked rank that
// exits, for good), so a test can read what the library logged.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path);
  ~StderrToFile();
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_ = -1;
};

std::string read_whole_file(const std::string& path);
// Every regular file under `directory`, concatenated (a file store's contents).
std::string read_directory_files(const std::string& directory);
size_t count_of(const std::string& text, const std::string& what);

// The TCP transport on loopback, whatever GLOO_LITE_TEST_TRANSPORT says: these tests attack
// its handshake.
std::shared_ptr<transport::Device> tcp_loopback_device();

// Relays one client connection to 127.0.0.1:server_port and records what went each way (a
// replayer's or an eavesdropper's view of the wire). Ends when either side closes.
class RecordingRelay {
 public:
  explicit RecordingRelay(uint16_t server_port);
  ~RecordingRelay();
  RecordingRelay(const RecordingRelay&) = delete;
  RecordingRelay& operator=(const RecordingRelay&) = delete;
  uint16_t port() const { return port_; }
  // Once the connection closed: what the client sent, and what the server answered.
  std::pair<Bytes, Bytes> finish();

 private:
  void relay(uint16_t server_port);
  void relay_until_closed(uint16_t server_port);

  Fd listener_;
  uint16_t port_;
  Bytes from_client_;
  Bytes from_server_;
  std::thread thread_;
};

}  // namespace gloo_lite::test
