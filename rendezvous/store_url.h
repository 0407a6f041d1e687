// Store URLs, as given in GLOO_LITE_STORE:
//   file:///absolute/dir
//   tcp://host:port            tcp://[ipv6]:port
//   redis://[:password@]host[:port][/db]      (port defaults to 6379, db to 0)
// Parsing is separate from open_store() so that launchers can validate a URL before starting
// ranks, and so that the rules can be tested without a server.
#pragma once

#include <cstdint>
#include <string>

namespace gloo_lite {

struct StoreUrl {
  std::string scheme;    // "file", "tcp" or "redis"
  std::string path;      // file: the directory
  std::string host;      // tcp, redis: name or address, IPv6 without brackets
  uint16_t port = 0;     // tcp, redis
  std::string password;  // redis: percent-decoded; empty when none
  int db = 0;            // redis: database index for SELECT
};

// The accepted forms, for error messages.
extern const char* const kStoreUrlForms;

// Throws InvalidArgument naming the problem and listing the accepted forms.
StoreUrl parse_store_url(const std::string& url);

}  // namespace gloo_lite
