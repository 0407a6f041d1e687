#include "transport_shm/shm_auth.h"

#include <cstring>

namespace gloo_lite::shm {
namespace {

// The mapping rank is the initiator, the segment's owner the responder.
auth::Transcript transcript(uint64_t context_id, int producer, int owner,
                            const SegmentHeader& producer_header,
                            const SegmentHeader& owner_header) {
  auth::Transcript t;
  t.purpose = "shm pair";
  t.context_id = context_id;
  t.initiator_rank = static_cast<uint32_t>(producer);
  t.responder_rank = static_cast<uint32_t>(owner);
  std::memcpy(t.initiator_nonce.data(), producer_header.auth_nonce, auth::kNonceBytes);
  std::memcpy(t.responder_nonce.data(), owner_header.auth_nonce, auth::kNonceBytes);
  return t;
}

}  // namespace

void publish_auth(SegmentHeader& header, const auth::Secret* secret) {
  header.auth = secret != nullptr ? 1 : 0;
  auth::Nonce nonce{};
  if (secret != nullptr) nonce = auth::fresh_nonce();
  std::memcpy(header.auth_nonce, nonce.data(), auth::kNonceBytes);
}

std::string auth_disagreement(const SegmentHeader& mine, const SegmentHeader& theirs, int peer) {
  if (mine.auth == theirs.auth) return "";
  const std::string knobs = "GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE";
  if (theirs.auth != 0) {
    return "rank " + std::to_string(peer) + " requires the job's secret (" + knobs +
           ") and this rank has none; every rank of a job must hold the same secret";
  }
  return "rank " + std::to_string(peer) + " holds no secret and this rank requires one (" + knobs +
         "); every rank of a job must hold the same secret";
}

void write_proof(const auth::Secret& secret, uint64_t context_id, int producer, int owner,
                 const SegmentHeader& producer_header, const SegmentHeader& owner_header,
                 InboxControl& inbox) {
  auth::Proof proof =
      auth::prove(secret, auth::Role::kInitiator,
                  transcript(context_id, producer, owner, producer_header, owner_header));
  std::memcpy(inbox.proof, proof.data(), proof.size());
}

bool proof_holds(const auth::Secret& secret, uint64_t context_id, int producer, int owner,
                 const SegmentHeader& producer_header, const SegmentHeader& owner_header,
                 const InboxControl& inbox) {
  return auth::verify(secret, auth::Role::kInitiator,
                      transcript(context_id, producer, owner, producer_header, owner_header),
                      inbox.proof);
}

}  // namespace gloo_lite::shm
