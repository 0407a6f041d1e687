// Fuzzes the store URL parser (rendezvous/store_url.h), which reads GLOO_LITE_STORE and the
// launchers' --store argument.
// Invariants: the parser either returns or throws InvalidArgument (any other exception, e.g.
// from a stray std::stoi, escapes and crashes the target); what it returns is well formed for
// its scheme; and formatting the result back into a URL and parsing that gives the same result.
#include <string>

#include "fuzz/fuzz_check.h"
#include "gloo_lite/base/error.h"
#include "rendezvous/store_url.h"

using gloo_lite::StoreUrl;

namespace {

bool same(const StoreUrl& x, const StoreUrl& y) {
  return x.scheme == y.scheme && x.path == y.path && x.host == y.host && x.port == y.port &&
         x.user == y.user && x.password == y.password && x.db == y.db;
}

std::string percent_encode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out.push_back(ch);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// An independent writer of the accepted forms (store_url.h).
std::string format(const StoreUrl& url) {
  if (url.scheme == "file") return "file://" + url.path;
  // Brackets as IPv6 addresses need them, and as a host that itself begins with '[' does.
  bool bracket = url.host.find(':') != std::string::npos || url.host[0] == '[';
  std::string authority =
      (bracket ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port);
  if (url.scheme == "tcp") return "tcp://" + authority;
  bool has_userinfo = !url.user.empty() || !url.password.empty();
  std::string userinfo =
      has_userinfo ? percent_encode(url.user) + ":" + percent_encode(url.password) + "@" : "";
  return "redis://" + userinfo + authority + "/" + std::to_string(url.db);
}

void check_well_formed(const StoreUrl& url) {
  if (url.scheme == "file") {
    FUZZ_CHECK(!url.path.empty() && url.path[0] == '/');
    FUZZ_CHECK(url.host.empty() && url.port == 0);
    return;
  }
  FUZZ_CHECK(url.scheme == "tcp" || url.scheme == "redis");
  FUZZ_CHECK(!url.host.empty() && url.port != 0);
  FUZZ_CHECK(url.db >= 0);
  if (url.scheme == "tcp") FUZZ_CHECK(url.user.empty() && url.password.empty() && url.db == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  StoreUrl url;
  try {
    url = gloo_lite::parse_store_url(text);
  } catch (const gloo_lite::InvalidArgument&) {
    return 0;
  }
  check_well_formed(url);
  std::string again = format(url);
  StoreUrl reparsed;
  try {
    reparsed = gloo_lite::parse_store_url(again);
  } catch (const gloo_lite::InvalidArgument& e) {
    std::fprintf(stderr, "'%s' parsed, but its canonical form '%s' did not: %s\n", text.c_str(),
                 again.c_str(), e.what());
    std::abort();
  }
  FUZZ_CHECK(same(url, reparsed));
  return 0;
}
