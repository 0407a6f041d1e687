#include "transport_ibverbs/mr_cache.h"

#include <cerrno>
#include <cstring>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

namespace gloo_lite::ibverbs {

MrCache::~MrCache() {
  for (auto& [start, entry] : entries_) ibv_dereg_mr(entry.mr);
}

ibv_mr* MrCache::acquire(void* data, size_t bytes) {
  auto start = reinterpret_cast<uintptr_t>(data);
  uintptr_t end = start + (bytes == 0 ? 1 : bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // Candidates start at or before `start`; registrations are few and long-lived.
  for (auto it = entries_.begin(); it != entries_.end() && it->first <= start; ++it) {
    if (it->second.end >= end) {
      ++it->second.references;
      ++stats_.hits;
      return it->second.mr;
    }
  }
  if (stats_.pinned_bytes + bytes > pinned_limit_) {
    throw Error("ibverbs: registering " + std::to_string(bytes) + " bytes would pin " +
                std::to_string(stats_.pinned_bytes + bytes) +
                " bytes, above GLOO_LITE_IB_PINNED_BYTES=" + std::to_string(pinned_limit_) +
                "; raise it or use smaller buffers");
  }
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  ibv_mr* mr = ibv_reg_mr(pd_, data, bytes == 0 ? 1 : bytes, access);
  if (mr == nullptr) {
    int error = errno;
    throw Error("ibverbs: ibv_reg_mr of " + std::to_string(bytes) +
                " bytes failed: " + std::strerror(error) +
                (error == ENOMEM || error == EPERM
                     ? " (the locked-memory limit is probably too low: raise `ulimit -l`, e.g. "
                       "unlimited, or LimitMEMLOCK in systemd/containers)"
                     : ""));
  }
  ++stats_.misses;
  stats_.pinned_bytes += mr->length;
  entries_.insert({start, Entry{mr, end, 1}});
  stats_.entries = entries_.size();
  return mr;
}

void MrCache::release(ibv_mr* mr) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.mr != mr) continue;
    if (--it->second.references == 0) {
      stats_.pinned_bytes -= mr->length;
      ++stats_.invalidations;
      ibv_dereg_mr(mr);
      entries_.erase(it);
      stats_.entries = entries_.size();
    }
    return;
  }
}

MrCacheStats MrCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace gloo_lite::ibverbs
