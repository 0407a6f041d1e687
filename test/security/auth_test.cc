// The HMAC module (gloo_lite/base/auth.h): proofs bind every field of the transcript and the
// side that speaks, and the secret's sources are checked as documented.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/error.h"
#include "test/security/security_support.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

auth::Transcript sample() {
  auth::Transcript t;
  t.purpose = "test purpose";
  t.context_id = 0x1122334455667788ull;
  t.initiator_rank = 3;
  t.responder_rank = 1;
  t.initiator_nonce = auth::fresh_nonce();
  t.responder_nonce = auth::fresh_nonce();
  return t;
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0);
}

std::string configured_error() {
  try {
    auth::configured_secret();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Auth, ProofVerifiesOnlyForItsOwnTranscriptAndSide) {
  auth::Secret secret(kSecret);
  auth::Transcript t = sample();
  auth::Proof proof = auth::prove(secret, auth::Role::kInitiator, t);
  EXPECT_TRUE(auth::verify(secret, auth::Role::kInitiator, t, proof.data()));
  // The other side's proof, a reflected one, is not this side's.
  EXPECT_FALSE(auth::verify(secret, auth::Role::kResponder, t, proof.data()));
  EXPECT_FALSE(auth::verify(auth::Secret(kOtherSecret), auth::Role::kInitiator, t, proof.data()));
  // Every field counts: change any one and the proof is refused.
  std::vector<auth::Transcript> changed(7, t);
  changed[0].purpose = "another purpose";
  changed[1].context_id ^= 1;
  changed[2].initiator_rank = 2;
  changed[3].responder_rank = 0;
  changed[4].initiator_nonce[5] ^= 1;
  changed[5].responder_nonce = auth::fresh_nonce();  // a replay meets a fresh nonce
  std::swap(changed[6].initiator_rank, changed[6].responder_rank);
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_FALSE(auth::verify(secret, auth::Role::kInitiator, changed[i], proof.data())) << i;
  }
}

TEST(Auth, ProofIsHmacSha256OfTheDocumentedTranscript) {
  // The reference: OpenSSL's HMAC called here on the transcript laid out by hand (purpose length
  // u32, purpose, side, context u64, initiator u32, responder u32, both nonces; little-endian).
  auth::Secret secret(kSecret);
  auth::Transcript t = sample();
  std::vector<uint8_t> message;
  auto put = [&](uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) message.push_back(static_cast<uint8_t>(value >> (8 * i)));
  };
  put(std::strlen(t.purpose), 4);
  message.insert(message.end(), t.purpose, t.purpose + std::strlen(t.purpose));
  put(2, 1);  // responder
  put(t.context_id, 8);
  put(t.initiator_rank, 4);
  put(t.responder_rank, 4);
  message.insert(message.end(), t.initiator_nonce.begin(), t.initiator_nonce.end());
  message.insert(message.end(), t.responder_nonce.begin(), t.responder_nonce.end());
  auth::Proof expected{};
  unsigned int length = 0;
  ASSERT_NE(HMAC(EVP_sha256(), kSecret, static_cast<int>(std::strlen(kSecret)), message.data(),
                 message.size(), expected.data(), &length),
            nullptr);
  ASSERT_EQ(length, auth::kProofBytes);
  EXPECT_EQ(auth::prove(secret, auth::Role::kResponder, t), expected);
}

TEST(Auth, NoncesAreFresh) {
  EXPECT_NE(auth::fresh_nonce(), auth::fresh_nonce());
  std::string a = auth::random_secret_text();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, auth::random_secret_text());
}

TEST(AuthConfig, UnsetMeansNoAuthentication) {
  ScopedEnv secret("GLOO_LITE_AUTH_SECRET", nullptr);
  ScopedEnv file("GLOO_LITE_AUTH_FILE", nullptr);
  EXPECT_EQ(auth::configured_secret(), nullptr);
}

TEST(AuthConfig, FileOnlyItsOwnerCanReadGivesTheSameSecretAsTheEnvironment) {
  TempDir dir;
  std::string path = dir.path() + "/secret";
  write_file(path, std::string(kSecret) + "\n", 0600);
  std::shared_ptr<const auth::Secret> from_file, from_env;
  {
    ScopedEnv file("GLOO_LITE_AUTH_FILE", path.c_str());
    ScopedEnv secret("GLOO_LITE_AUTH_SECRET", nullptr);
    from_file = auth::configured_secret();
  }
  {
    ScopedEnv file("GLOO_LITE_AUTH_FILE", nullptr);
    ScopedEnv secret("GLOO_LITE_AUTH_SECRET", kSecret);
    from_env = auth::configured_secret();
  }
  ASSERT_TRUE(from_file && from_env);
  auth::Transcript t = sample();
  EXPECT_EQ(auth::prove(*from_file, auth::Role::kInitiator, t),
            auth::prove(*from_env, auth::Role::kInitiator, t));
}

TEST(AuthConfig, GroupOrWorldReadableFileIsRefusedNamingTheFix) {
  TempDir dir;
  std::string path = dir.path() + "/secret";
  ScopedEnv secret("GLOO_LITE_AUTH_SECRET", nullptr);
  ScopedEnv file("GLOO_LITE_AUTH_FILE", path.c_str());
  for (mode_t mode : {0644, 0640, 0604, 0660}) {
    write_file(path, kSecret, mode);
    std::string message = configured_error();
    EXPECT_NE(message.find("GLOO_LITE_AUTH_FILE=" + path), std::string::npos) << message;
    EXPECT_NE(message.find("chmod 600"), std::string::npos) << message;
    EXPECT_EQ(message.find(kSecret), std::string::npos) << message;
  }
  write_file(path, kSecret, 0400);
  EXPECT_EQ(configured_error(), "");
}

TEST(AuthConfig, MissingFileShortSecretAndBothKnobsAreRefused) {
  {
    ScopedEnv secret("GLOO_LITE_AUTH_SECRET", nullptr);
    ScopedEnv file("GLOO_LITE_AUTH_FILE", "/nonexistent/gloo_lite_secret");
    EXPECT_NE(configured_error().find("cannot open"), std::string::npos) << configured_error();
  }
  {
    ScopedEnv secret("GLOO_LITE_AUTH_SECRET", "short");
    ScopedEnv file("GLOO_LITE_AUTH_FILE", nullptr);
    std::string message = configured_error();
    EXPECT_NE(message.find("fewer than 16"), std::string::npos) << message;
    EXPECT_EQ(message.find("short"), std::string::npos) << message;  // never the secret itself
  }
  {
    ScopedEnv secret("GLOO_LITE_AUTH_SECRET", kSecret);
    ScopedEnv file("GLOO_LITE_AUTH_FILE", "/tmp/x");
    EXPECT_NE(configured_error().find("both set"), std::string::npos) << configured_error();
  }
}

}  // namespace
}  // namespace gloo_lite::test
