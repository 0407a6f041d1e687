// What crosses hosts in a message algorithm (issue 24): the cost functions describe an
// algorithm's messages (a step's, or all those in flight together) and HostLinks counts the
// bytes over each host's link, which all ranks of that host sending (or receiving) across
// share, and over each rank's own port. Across hosts the link is what bounds an algorithm on a
// slow network: a flat ring on 2 hosts of 2 ranks sends one block per step over each link,
// direct allgather sends every block to every rank of another host, 2x the bytes of the ring
// over each link. One counter for every family, so that they are charged alike.
//
// Costs must depend only on what every rank agrees on: the hosts (exchanged at connect, or a
// cluster described to gloo_lite_tuner) and the call's shape, never on the asking rank.
#pragma once

#include <utility>
#include <vector>

#include "gloo_lite/algorithms/registry.h"

namespace gloo_lite::algo {

// Whom an algorithm's ranks send to across hosts: the same neighbours in every step (the
// ring's loop and chain, the tree's edges), or another peer in each step or every peer at once
// (halving and recursive doubling, bruck, pairwise, direct). Measured, the second kind reaches
// less of a link's rate for the same bytes (CostModel::net_changing, docs/algorithms.md,
// "Across hosts").
enum class Partners { kFixed, kChanging };

class HostLinks {
 public:
  // The hosts of `call`'s ranks (hosts_of). Where they are one host, or none is described,
  // spans() is false and a cost function keeps its single-host formula unchanged.
  HostLinks(const Call& call, Partners partners);

  bool spans() const { return host_count_ > 1; }

  // Adds a message of `bytes` from rank `from` to rank `to` (to < 0 or to == from: none).
  void send(int from, int to, double bytes);
  // Adds, for every rank r, the message r -> message(r).first of message(r).second bytes.
  template <typename Message>
  void every_rank(Message message) {
    for (int r = 0; r < size_; ++r) {
      std::pair<int, double> m = message(r);
      send(r, m.first, m.second);
    }
  }
  // Forgets what was added (the next step).
  void clear();

  // Whether any message added crosses hosts.
  bool crossed() const { return crossed_; }
  // Seconds to move what was added, all of it in flight together: the busiest host link (the
  // larger of what a host sends and receives across) at the model's cross-host beta (divided by
  // net_changing for Partners::kChanging), or the busiest rank's port (the larger of what it
  // sends and receives, any peer) at beta, whichever is longer.
  double transfer(const CostModel& model) const;
  // `model` with its step latency the cross-host one when a message crossed: for latency().
  CostModel latency_model(const CostModel& model) const;
  // One step of what was added: its latency and its transfer.
  double step(const CostModel& model) const { return latency_model(model).alpha + transfer(model); }

 private:
  Partners partners_;
  int size_ = 0;
  int host_count_ = 1;
  std::vector<int> host_;  // host index of every rank
  std::vector<double> host_out_, host_in_, rank_out_, rank_in_;
  bool crossed_ = false;
};

}  // namespace gloo_lite::algo
