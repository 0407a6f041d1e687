// Memory registrations, cached by address range: every region registered through a mesh of this
// device looks up a live registration that covers it before calling ibv_reg_mr, so one buffer
// used by many messages (and by overlapping regions) is registered once. A registration is
// invalidated (ibv_dereg_mr) when the last region using it is deregistered: keeping it longer
// would be unsafe, since freed memory may be unmapped and its address reused for other pages.
// Pinned bytes are bounded (GLOO_LITE_IB_PINNED_BYTES).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "transport_ibverbs/ib_device.h"

namespace gloo_lite::ibverbs {

class MrCache {
 public:
  MrCache(ibv_pd* pd, uint64_t pinned_limit) : pd_(pd), pinned_limit_(pinned_limit) {}
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // A registration covering [data, data + bytes), with one more reference. Throws on failure.
  ibv_mr* acquire(void* data, size_t bytes);
  void release(ibv_mr* mr);
  MrCacheStats stats() const;

 private:
  struct Entry {
    ibv_mr* mr;
    uintptr_t end;
    int references;
  };
  ibv_pd* pd_;
  uint64_t pinned_limit_;
  mutable std::mutex mutex_;
  std::multimap<uintptr_t, Entry> entries_;  // by start address
  MrCacheStats stats_;
};

}  // namespace gloo_lite::ibverbs
