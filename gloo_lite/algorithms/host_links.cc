#include "gloo_lite/algorithms/host_links.h"

#include <algorithm>
#include <map>
#include <string>

namespace gloo_lite::algo {

HostLinks::HostLinks(const Call& call, Partners partners) : partners_(partners), size_(call.size) {
  const std::vector<std::string>* names = hosts_of(call);
  if (names == nullptr || static_cast<int>(names->size()) != call.size) return;
  std::map<std::string, int> index;
  host_.reserve(names->size());
  for (const std::string& name : *names) {
    host_.push_back(index.emplace(name, static_cast<int>(index.size())).first->second);
  }
  host_count_ = static_cast<int>(index.size());
  host_out_.assign(host_count_, 0);
  host_in_.assign(host_count_, 0);
  rank_out_.assign(size_, 0);
  rank_in_.assign(size_, 0);
}

void HostLinks::send(int from, int to, double bytes) {
  if (!spans() || to < 0 || to == from) return;
  rank_out_[from] += bytes;
  rank_in_[to] += bytes;
  if (host_[from] != host_[to]) {
    host_out_[host_[from]] += bytes;
    host_in_[host_[to]] += bytes;
    crossed_ = true;
  }
}

void HostLinks::clear() {
  std::fill(host_out_.begin(), host_out_.end(), 0);
  std::fill(host_in_.begin(), host_in_.end(), 0);
  std::fill(rank_out_.begin(), rank_out_.end(), 0);
  std::fill(rank_in_.begin(), rank_in_.end(), 0);
  crossed_ = false;
}

namespace {
double largest(const std::vector<double>& a, const std::vector<double>& b) {
  double most = 0;
  for (size_t i = 0; i < a.size(); ++i) most = std::max({most, a[i], b[i]});
  return most;
}
}  // namespace

double HostLinks::transfer(const CostModel& model) const {
  double link_beta = model.cross_beta();
  if (partners_ == Partners::kChanging) link_beta /= model.net_changing;
  return std::max(largest(host_out_, host_in_) * link_beta,
                  largest(rank_out_, rank_in_) * model.beta);
}

CostModel HostLinks::latency_model(const CostModel& model) const {
  CostModel result = model;
  if (crossed_) result.alpha = model.cross_alpha();
  return result;
}

}  // namespace gloo_lite::algo
