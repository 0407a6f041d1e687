// Shared-secret authentication of the pairs of a shared-memory mesh (docs/security.md), with the
// one mechanism of gloo_lite/base/auth.h. Only processes of the same user (or root) can map a
// segment at all (/proc/<pid>/fd); with a secret configured, a producer must also prove that it
// holds the job's secret before the owner admits it: a process of another job of that user (a
// stale store key, a mixed-up prefix) is refused instead of joining the context.
//
// Each segment's header carries a fresh nonce of its owner. A rank that maps a peer's segment
// writes, before its hello, an HMAC over (purpose, context id, its rank, the owner's rank, its
// own segment's nonce, the owner's nonce) into its inbox there; the owner checks it when it sees
// the hello. Every pair is mapped both ways, so both ends prove themselves to each other, and a
// proof is worth nothing for another segment, context or pair.
#pragma once

#include <string>

#include "gloo_lite/base/auth.h"
#include "transport_shm/segment.h"

namespace gloo_lite::shm {

static_assert(sizeof(InboxControl::proof) == auth::kProofBytes, "a proof fills its field");
static_assert(sizeof(SegmentHeader::auth_nonce) == auth::kNonceBytes, "a nonce fills its field");

// Before `ready`: whether this segment's owner requires proofs, and its nonce if so.
void publish_auth(SegmentHeader& header, const auth::Secret* secret);

// "" when `mine` (this rank's header) and `theirs` (the peer's) agree on authentication, else
// why not, naming the knobs: every rank of a job must hold the same secret, or none.
std::string auth_disagreement(const SegmentHeader& mine, const SegmentHeader& theirs, int peer);

// The producer's proof, written into its inbox in the owner's segment before its hello.
void write_proof(const auth::Secret& secret, uint64_t context_id, int producer, int owner,
                 const SegmentHeader& producer_header, const SegmentHeader& owner_header,
                 InboxControl& inbox);

// The owner's check of that proof (constant time).
bool proof_holds(const auth::Secret& secret, uint64_t context_id, int producer, int owner,
                 const SegmentHeader& producer_header, const SegmentHeader& owner_header,
                 const InboxControl& inbox);

}  // namespace gloo_lite::shm
