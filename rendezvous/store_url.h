// Store URLs, as given in GLOO_LITE_STORE:
//   file:///absolute/dir
//   tcp://host:port            tcp://[ipv6]:port
//   redis://[[user]:password@]host[:port][/db]      (port defaults to 6379, db to 0; a user
//   is a Redis 6 ACL user, none the default user)
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
  std::string user;      // redis: ACL user name, percent-decoded; empty: the default user
  std::string password;  // redis: percent-decoded; empty when none
  int db = 0;            // redis: database index for SELECT
};

// The accepted forms, for error messages.
extern const char* const kStoreUrlForms;

// Throws InvalidArgument naming the problem and listing the accepted forms.
StoreUrl parse_store_url(const std::string& url);

// `url` with its password (whatever follows the first ':' of the user part) replaced by "***",
// or the whole user part when it has no ':' (it may be a mistyped password): the only form of a
// store URL that may appear in a log line or an error message. A URL without a user part, and
// every file:// URL, comes back unchanged.
std::string redact_store_url(const std::string& url);

}  // namespace gloo_lite
