// Shared-secret authentication (docs/security.md): the one mechanism every handshake that admits
// a peer uses (TCP transport pairs, TCP store clients). Each side proves it holds the job's
// secret with an HMAC-SHA256 (OpenSSL) over a transcript of fresh nonces from both sides and of
// what the connection is for (purpose, context id, both ranks) and which side speaks. The secret
// never leaves the process; a proof is good for one handshake only, because the other side's
// nonce is new every time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gloo_lite::auth {

constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// Shortest secret accepted: a short one could be guessed offline from one captured handshake.
constexpr size_t kMinSecretBytes = 16;

// The job's secret. It has no accessor that yields text, so it cannot end up in a message by
// accident; its bytes are wiped when it is destroyed.
class Secret {
 public:
  explicit Secret(std::string bytes);
  ~Secret();
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(bytes_.data()); }
  size_t size() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

// The secret configured for this process: GLOO_LITE_AUTH_SECRET, else the contents of the file
// GLOO_LITE_AUTH_FILE names (one trailing newline ignored), else nullptr: authentication off.
// Throws InvalidArgument, naming the knob and what to do, when both are set, when the file cannot
// be read, is not a regular file or can be read or written by its group or others, or when the
// secret is shorter than kMinSecretBytes.
std::shared_ptr<const Secret> configured_secret();

// A fresh random nonce (RAND_bytes); throws Error when the generator fails.
Nonce fresh_nonce();

// 32 random bytes as 64 hex digits: a per-job secret (gloo_lite_run makes one).
std::string random_secret_text();

// Which side of a handshake a proof comes from: the one that opened the connection, or the one
// that accepted it. In the transcript, so that one side's proof never passes for the other's.
enum class Role : uint8_t { kInitiator = 1, kResponder = 2 };

// What one handshake admits. `purpose` separates the mechanisms ("tcp transport", "tcp store"),
// so a proof made for one is worthless for the other.
struct Transcript {
  const char* purpose = "";
  uint64_t context_id = 0;
  uint32_t initiator_rank = 0;
  uint32_t responder_rank = 0;
  Nonce initiator_nonce{};
  Nonce responder_nonce{};
};

Proof prove(const Secret& secret, Role from, const Transcript& transcript);
// Whether `proof` (kProofBytes) is the one `from` must send; compared in constant time.
bool verify(const Secret& secret, Role from, const Transcript& transcript, const uint8_t* proof);

}  // namespace gloo_lite::auth
