#include "rendezvous/file_store_names.h"

#include <climits>

#include "gloo_lite/base/error.h"
#include "rendezvous/store_util.h"

namespace gloo_lite::store_detail {

namespace {

// Well under NAME_MAX (255) even with the two-byte kind prefix.
constexpr size_t kComponentChars = 200;

bool kept_verbatim(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::vector<std::string> encode_components(const std::string& key) {
  static const char kHex[] = "0123456789ABCDEF";
  std::vector<std::string> components(1);
  for (char ch : key) {
    unsigned char c = static_cast<unsigned char>(ch);
    std::string piece =
        kept_verbatim(c) ? std::string(1, ch) : std::string{'%', kHex[c >> 4], kHex[c & 15]};
    // Never split an escape across components.
    if (components.back().size() + piece.size() > kComponentChars) components.emplace_back();
    components.back() += piece;
  }
  return components;
}

}  // namespace

FileKeyPaths file_key_paths(const std::string& root, const std::string& key) {
  std::vector<std::string> components = encode_components(key);
  FileKeyPaths paths;
  std::string dir = root;
  for (size_t i = 0; i + 1 < components.size(); ++i) {
    dir += "/d." + components[i];
    paths.directories.push_back(dir);
  }
  paths.parent = dir;
  paths.value = dir + "/k." + components.back();
  paths.lock = dir + "/l." + components.back();
  if (paths.value.size() >= PATH_MAX) {
    throw InvalidArgument("file://" + root + ": key " + quote_key(key) +
                          " is too long for a file " + "store: its encoded path takes " +
                          std::to_string(paths.value.size()) + " bytes, more than PATH_MAX (" +
                          std::to_string(PATH_MAX) + "); use shorter keys");
  }
  return paths;
}

}  // namespace gloo_lite::store_detail
