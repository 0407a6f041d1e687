#include "gloo_lite/algorithms/subset_mesh.h"

#include "gloo_lite/base/error.h"

namespace gloo_lite::algo {

std::string SubsetMesh::address() const {
  throw InvalidArgument("a subset of a mesh has no address of its own; its parent has");
}

void SubsetMesh::connect(const std::vector<std::string>&, uint64_t, const Deadline&) {
  throw InvalidArgument("a subset of a mesh is connected through its parent");
}

transport::RequestPtr SubsetMesh::recv(const std::vector<int>& peers, uint64_t tag,
                                       transport::Memory& memory, size_t offset, size_t bytes,
                                       uint64_t fingerprint) {
  std::vector<int> mapped;
  mapped.reserve(peers.size());
  for (int peer : peers) mapped.push_back(ranks_.at(peer));
  return parent_.recv(mapped, tag, memory, offset, bytes, fingerprint);
}

}  // namespace gloo_lite::algo
