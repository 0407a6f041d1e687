#include "gloo_lite/base/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"

namespace gloo_lite::auth {
namespace {

constexpr const char* kWhatToDo =
    "; give every rank and the store the same secret of at least 16 bytes, in "
    "GLOO_LITE_AUTH_SECRET or in a file only its owner can read (chmod 600) named by "
    "GLOO_LITE_AUTH_FILE";

std::string read_secret_file(const std::string& path) {
  const std::string knob = "GLOO_LITE_AUTH_FILE=" + path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    throw InvalidArgument(knob + ": cannot open the secret file: " + std::strerror(errno) +
                          kWhatToDo);
  }
  Fd file(fd);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    throw InvalidArgument(knob + ": not a regular file" + kWhatToDo);
  }
  // Checked on the descriptor we read, so the file cannot be swapped between check and read.
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw InvalidArgument(knob + ": the secret file has mode " + mode +
                          ", so other users may read or change it; refusing it (chmod 600 " + path +
                          ")");
  }
  std::string contents;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw InvalidArgument(knob + ": reading the secret file failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
    if (contents.size() > (1 << 20)) throw InvalidArgument(knob + ": larger than 1 MiB");
  }
  OPENSSL_cleanse(buffer, sizeof(buffer));
  // `echo secret > file` adds a newline that the same secret in the environment lacks.
  if (!contents.empty() && contents.back() == '\n') contents.pop_back();
  if (!contents.empty() && contents.back() == '\r') contents.pop_back();
  return contents;
}

void put_field(std::vector<uint8_t>& out, const void* data, size_t bytes) {
  const auto* begin = static_cast<const uint8_t*>(data);
  out.insert(out.end(), begin, begin + bytes);
}

// Fixed-width fields after a length-prefixed purpose: no two transcripts encode alike.
std::vector<uint8_t> encode(Role from, const Transcript& t) {
  std::vector<uint8_t> out;
  uint8_t number[8];
  const size_t purpose_bytes = std::strlen(t.purpose);
  put_u32(number, static_cast<uint32_t>(purpose_bytes));
  put_field(out, number, 4);
  put_field(out, t.purpose, purpose_bytes);
  out.push_back(static_cast<uint8_t>(from));
  put_u64(number, t.context_id);
  put_field(out, number, 8);
  put_u32(number, t.initiator_rank);
  put_field(out, number, 4);
  put_u32(number, t.responder_rank);
  put_field(out, number, 4);
  put_field(out, t.initiator_nonce.data(), kNonceBytes);
  put_field(out, t.responder_nonce.data(), kNonceBytes);
  return out;
}

}  // namespace

Secret::Secret(std::string bytes) : bytes_(std::move(bytes)) {}

Secret::~Secret() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

std::shared_ptr<const Secret> configured_secret() {
  std::string secret_knob = knob_string("GLOO_LITE_AUTH_SECRET");
  std::string file_knob = knob_string("GLOO_LITE_AUTH_FILE");
  if (!secret_knob.empty() && !file_knob.empty()) {
    throw InvalidArgument(
        "GLOO_LITE_AUTH_SECRET and GLOO_LITE_AUTH_FILE are both set; set only one of them");
  }
  if (secret_knob.empty() && file_knob.empty()) return nullptr;
  const char* source = secret_knob.empty() ? "GLOO_LITE_AUTH_FILE" : "GLOO_LITE_AUTH_SECRET";
  std::shared_ptr<const Secret> secret = std::make_shared<Secret>(
      secret_knob.empty() ? read_secret_file(file_knob) : std::move(secret_knob));
  if (secret->size() < kMinSecretBytes) {
    throw InvalidArgument(std::string(source) + ": the secret has " +
                          std::to_string(secret->size()) + " bytes, fewer than " +
                          std::to_string(kMinSecretBytes) + kWhatToDo);
  }
  return secret;
}

Nonce fresh_nonce() {
  Nonce nonce;
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    throw Error("authentication: OpenSSL's random generator failed (RAND_bytes)");
  }
  return nonce;
}

std::string random_secret_text() {
  Nonce bytes = fresh_nonce();
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : bytes) {
    text.push_back(kHex[byte >> 4]);
    text.push_back(kHex[byte & 15]);
  }
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return text;
}

Proof prove(const Secret& secret, Role from, const Transcript& transcript) {
  std::vector<uint8_t> message = encode(from, transcript);
  Proof proof{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message.data(),
           message.size(), proof.data(), &length) == nullptr ||
      length != kProofBytes) {
    throw Error("authentication: HMAC-SHA256 failed (OpenSSL)");
  }
  return proof;
}

bool verify(const Secret& secret, Role from, const Transcript& transcript, const uint8_t* proof) {
  Proof expected = prove(secret, from, transcript);
  return CRYPTO_memcmp(expected.data(), proof, kProofBytes) == 0;
}

}  // namespace gloo_lite::auth
