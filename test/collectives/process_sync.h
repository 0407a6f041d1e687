// What forked ranks share besides their contexts: memory mapped before the fork (for outcomes
// and counters), and a barrier through the store that keeps every rank alive until all are done
// (so that no rank sees a ConnectionError merely because a peer finished first and exited).
#pragma once

#include <sys/mman.h>

#include <chrono>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "gloo_lite/context.h"
#include "gloo_lite/context_engine.h"

namespace gloo_lite::test {

// One T in anonymous shared memory: created before run_context_processes forks, seen by every
// child and by the parent.
template <typename T>
class SharedMapping {
 public:
  SharedMapping() {
    void* memory =
        mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("mmap of shared test state failed");
    object_ = new (memory) T();
  }
  ~SharedMapping() {
    object_->~T();
    munmap(object_, sizeof(T));
  }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  T& operator*() const { return *object_; }
  T* operator->() const { return object_; }

 private:
  T* object_;
};

// Waits (through the context's store, not its transport) until every rank has reached `name`.
inline void store_barrier(Context& context, const std::string& name,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::string prefix = "test/" + name + "/";
  engine_of(context).store()->set(prefix + std::to_string(context.rank()), {1});
  std::vector<std::string> keys;
  for (int rank = 0; rank < context.size(); ++rank) keys.push_back(prefix + std::to_string(rank));
  engine_of(context).store()->wait(keys, Deadline::after(timeout));
}

}  // namespace gloo_lite::test
