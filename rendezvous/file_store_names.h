// How the file store maps keys to paths. Keys are arbitrary bytes and often contain '/', so each
// key is percent-encoded into names made only of [A-Za-z0-9._-%]. A one-letter kind prefix
// ("k." value, "l." lock, "d." directory, "t." temporary) keeps "." and ".." impossible and
// keeps the kinds apart. Encoded keys longer than one path component allows are cut into
// directory levels; the whole path must still fit PATH_MAX, which allows about 3.9 KiB of
// plain ASCII key, or 1.3 KiB of key bytes that all need escaping.
#pragma once

#include <string>
#include <vector>

namespace gloo_lite::store_detail {

struct FileKeyPaths {
  std::vector<std::string> directories;  // to create, outermost first; empty for short keys
  std::string parent;                    // directory holding the two files below
  std::string value;                     // the key's value file
  std::string lock;                      // lock file serialising add() on this key
};

// InvalidArgument when the encoded key would make a path longer than PATH_MAX.
FileKeyPaths file_key_paths(const std::string& root, const std::string& key);

}  // namespace gloo_lite::store_detail
