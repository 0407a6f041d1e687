// Internal: the TCP store server's side of authentication (docs/security.md): which requests a
// connection may send before and after it proved the job's secret, and the two steps of the
// challenge-response (tcp_store_protocol.h, AUTH-HELLO and AUTH-PROOF). The server's event
// loop (tcp_store_server.cc) keeps one ServerAuth per connection and sends or rejects as told.
#pragma once

#include <string>
#include <vector>

#include "gloo_lite/base/auth.h"
#include "rendezvous/tcp_store_protocol.h"

namespace gloo_lite::tcp_store {

// One connection's progress through the handshake.
struct ServerAuth {
  bool challenged = false;     // AUTH-HELLO answered
  bool authenticated = false;  // a good AUTH-PROOF received
  auth::Nonce client_nonce{};
  auth::Nonce server_nonce{};
};

// Whether this request may be read, from its header alone: "" or why not. Without a secret
// (nullptr) nothing is asked; with one, nothing but the two authentication steps, in order, is
// read before the client has proved it holds the secret.
std::string admission(const auth::Secret* secret, const ServerAuth& state,
                      const RequestHeader& request);

// The answer to an authentication request: a response to send, or why the client is dropped.
struct AuthAnswer {
  Bytes response;
  std::string problem;  // non-empty: reject the client with it
};
// The server proves itself first (its proof answers the client's nonce), then checks the
// client's proof of its own fresh nonce: a recorded exchange is worthless on a new connection.
// `request` passed admission().
AuthAnswer authenticate(const auth::Secret& secret, ServerAuth& state, const RequestHeader& request,
                        const std::vector<Item>& items);

}  // namespace gloo_lite::tcp_store
