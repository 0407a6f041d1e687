// A view of some ranks of a mesh as a mesh of their own, so that any message algorithm runs on a
// subset of a context's ranks unchanged (hierarchical.cc: among the host leaders, or among the
// ranks of one host when their segment is unavailable). Rank i of the view is ranks[i] of the
// parent; sends, receives, waits, cancels, memory and aborts are the parent's, so tags,
// matching, fingerprints, deadlines and failures behave exactly as on the whole context.
// Request::source() and error texts name the parent's ranks (the ones a user knows).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/transport/transport.h"

namespace gloo_lite::algo {

class SubsetMesh : public transport::Mesh {
 public:
  // `ranks`: the parent's ranks of the view, in view order; `rank`: this rank's index in it.
  SubsetMesh(transport::Mesh& parent, std::vector<int> ranks, int rank)
      : parent_(parent), ranks_(std::move(ranks)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(ranks_.size()); }
  int parent_rank(int rank) const { return ranks_[rank]; }
  // A view is never connected: its parent is.
  std::string address() const override;
  void connect(const std::vector<std::string>& addresses, uint64_t context_id,
               const Deadline& deadline) override;
  std::unique_ptr<transport::Memory> register_memory(void* data, size_t bytes,
                                                     transport::MemoryKind kind) override {
    return parent_.register_memory(data, bytes, kind);
  }
  bool registers_by_pointer() const override { return parent_.registers_by_pointer(); }
  transport::RequestPtr send(int peer, uint64_t tag, const transport::Memory& memory, size_t offset,
                             size_t bytes, uint64_t fingerprint) override {
    return parent_.send(ranks_.at(peer), tag, memory, offset, bytes, fingerprint);
  }
  transport::RequestPtr recv(const std::vector<int>& peers, uint64_t tag, transport::Memory& memory,
                             size_t offset, size_t bytes, uint64_t fingerprint) override;
  using Mesh::recv;
  using Mesh::send;
  bool wait_until(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
                  const Deadline& until) override {
    return parent_.wait_until(requests, deadline, until);
  }
  void cancel(const transport::RequestPtr& request) override { parent_.cancel(request); }
  void cancel_failing(const transport::RequestPtr& request) override {
    parent_.cancel_failing(request);
  }
  void abort(const std::string& reason) override { parent_.abort(reason); }
  std::string describe_peer(int peer) const override {
    return parent_.describe_peer(ranks_.at(peer));
  }
  std::string transport_of(int peer) const override {
    return parent_.transport_of(ranks_.at(peer));
  }

 private:
  transport::Mesh& parent_;
  std::vector<int> ranks_;
  int rank_;
};

}  // namespace gloo_lite::algo
