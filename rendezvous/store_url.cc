#include "rendezvous/store_url.h"

#include <cctype>
#include <climits>

#include "gloo_lite/base/error.h"

namespace gloo_lite {

const char* const kStoreUrlForms =
    "accepted forms: file:///absolute/dir, tcp://host:port, tcp://[ipv6]:port, "
    "redis://[[user]:password@]host[:port][/db]";

namespace {

[[noreturn]] void reject(const std::string& url, const std::string& problem) {
  throw InvalidArgument("store URL '" + redact_store_url(url) + "': " + problem + "; " +
                        kStoreUrlForms);
}

bool parse_decimal(const std::string& text, long long max, long long* out) {
  if (text.empty() || text.size() > 10) return false;
  long long value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value > max) return false;
  *out = value;
  return true;
}

// Splits "host:port", "[v6]:port" or (when a default port is allowed) "host", "[v6]".
void parse_authority(const std::string& url, const std::string& authority, int default_port,
                     StoreUrl* out) {
  std::string port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) reject(url, "unterminated '[' in the IPv6 address");
    out->host = authority.substr(1, close - 1);
    std::string rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') reject(url, "expected ':port' after ']'");
      port_text = rest.substr(1);
      if (port_text.empty()) reject(url, "empty port");
    }
  } else {
    size_t colon = authority.rfind(':');
    if (colon == std::string::npos) {
      out->host = authority;
    } else {
      out->host = authority.substr(0, colon);
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) reject(url, "empty port");
    }
    if (out->host.find(':') != std::string::npos) {
      reject(url, "an IPv6 address must be written in brackets, e.g. tcp://[::1]:29500");
    }
  }
  if (out->host.empty()) reject(url, "missing host");
  if (port_text.empty()) {
    if (default_port < 0) reject(url, "missing port");
    out->port = static_cast<uint16_t>(default_port);
    return;
  }
  long long port = 0;
  if (!parse_decimal(port_text, 65535, &port) || port == 0) {
    reject(url, "port '" + port_text + "' is not a number in 1..65535");
  }
  out->port = static_cast<uint16_t>(port);
}

// User names and passwords may need characters that are special in URLs ('@', '/', ':'): %XX
// decodes them. `what` names the part in the message.
std::string percent_decode(const std::string& url, const std::string& text, const char* what) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      reject(url, std::string("bad %-escape in the ") + what);
    }
    out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
    i += 2;
  }
  return out;
}

void parse_redis(const std::string& url, const std::string& rest, StoreUrl* out) {
  std::string location = rest;
  size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    std::string userinfo = rest.substr(0, at);
    location = rest.substr(at + 1);
    // The first ':' ends the user name (a ':' in it must be %3A); the password may hold any.
    size_t colon = userinfo.find(':');
    if (colon == std::string::npos) {
      reject(url,
             "a user needs a password: write user:password@ (or :password@ for the "
             "default user)");
    }
    out->user = percent_decode(url, userinfo.substr(0, colon), "user name");
    out->password = percent_decode(url, userinfo.substr(colon + 1), "password");
    if (out->password.empty()) reject(url, "empty password");
  }
  std::string authority = location;
  size_t slash = location.find('/');
  if (slash != std::string::npos) {
    authority = location.substr(0, slash);
    std::string db_text = location.substr(slash + 1);
    long long db = 0;
    if (!db_text.empty() && !parse_decimal(db_text, INT_MAX, &db)) {
      reject(url, "database '" + db_text + "' is not a non-negative integer");
    }
    out->db = static_cast<int>(db);
  }
  parse_authority(url, authority, 6379, out);
}

}  // namespace

std::string redact_store_url(const std::string& url) {
  size_t sep = url.find("://");
  if (sep == std::string::npos || url.compare(0, sep, "file") == 0) return url;
  // The parser takes the last '@' as the end of the user part (a password may hold '@' and '/'
  // unescaped), so the redaction does too.
  size_t start = sep + 3;
  size_t at = url.rfind('@');
  if (at == std::string::npos || at < start) return url;
  size_t colon = url.find(':', start);
  if (colon == std::string::npos || colon > at)
    return url.substr(0, start) + "***" + url.substr(at);
  if (colon + 1 == at) return url;  // an empty password: nothing to hide
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

StoreUrl parse_store_url(const std::string& url) {
  size_t sep = url.find("://");
  if (sep == std::string::npos) reject(url, "missing scheme");
  StoreUrl out;
  out.scheme = url.substr(0, sep);
  std::string rest = url.substr(sep + 3);
  if (out.scheme == "file") {
    if (rest.empty() || rest.front() != '/') {
      reject(url, "a file store needs an absolute directory (three slashes: file:///dir)");
    }
    out.path = rest;
  } else if (out.scheme == "tcp") {
    if (rest.find('/') != std::string::npos) reject(url, "a tcp store URL has no path");
    parse_authority(url, rest, -1, &out);
  } else if (out.scheme == "redis") {
    parse_redis(url, rest, &out);
  } else {
    reject(url, "unknown scheme '" + out.scheme + "'");
  }
  return out;
}

}  // namespace gloo_lite
