#include "rendezvous/tcp_store_auth.h"

#include <cstring>

namespace gloo_lite::tcp_store {

std::string admission(const auth::Secret* secret, const ServerAuth& state,
                      const RequestHeader& request) {
  const Op op = request.op;
  if (secret == nullptr) {
    if (!is_auth(op)) return "";
    return "the client wants to authenticate, but this server has no secret (start it with the "
           "job's GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE)";
  }
  if (state.authenticated) {
    return is_auth(op) ? "authenticated twice on one connection" : "";
  }
  if (!is_auth(op)) {
    return std::string("a ") + op_name(op) +
           " request without authenticating: this store requires the job's secret "
           "(GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE on the client)";
  }
  if (request.body_bytes > kMaxAuthBodyBytes) return "an oversized auth request";
  if (op == kAuthHello && state.challenged) return "a second auth-hello";
  if (op == kAuthProof && !state.challenged) return "an auth-proof before auth-hello";
  return "";
}

AuthAnswer authenticate(const auth::Secret& secret, ServerAuth& state, const RequestHeader& request,
                        const std::vector<Item>& items) {
  const size_t expected_bytes = request.op == kAuthHello ? auth::kNonceBytes : auth::kProofBytes;
  if (items.size() != 1 || items[0].size != expected_bytes) {
    return {{}, std::string("malformed ") + op_name(request.op) + " request"};
  }
  auth::Transcript transcript;
  transcript.purpose = kAuthPurpose;
  if (request.op == kAuthHello) {
    std::memcpy(state.client_nonce.data(), items[0].data, auth::kNonceBytes);
    state.server_nonce = auth::fresh_nonce();
    transcript.initiator_nonce = state.client_nonce;
    transcript.responder_nonce = state.server_nonce;
    auth::Proof proof = auth::prove(secret, auth::Role::kResponder, transcript);
    state.challenged = true;
    MessageBuilder builder(kResponseHeaderBytes, 2);
    builder.add(state.server_nonce.data(), state.server_nonce.size());
    builder.add(proof.data(), proof.size());
    return {builder.finish_response(Status::kOk), ""};
  }
  transcript.initiator_nonce = state.client_nonce;
  transcript.responder_nonce = state.server_nonce;
  if (!auth::verify(secret, auth::Role::kInitiator, transcript, items[0].data)) {
    return {{},
            "its proof of the job's secret is wrong: a client with another secret, or a forged "
            "or replayed handshake"};
  }
  state.authenticated = true;
  return {MessageBuilder(kResponseHeaderBytes, 0).finish_response(Status::kOk), ""};
}

}  // namespace gloo_lite::tcp_store
