// Ranks as threads of this process for tests that may fail or destroy their contexts: each run
// connects fresh contexts (nothing a failed context leaves behind reaches the next test), hands
// each rank the only shared_ptr to its context (so a test can destroy it while work is in
// flight), and offers flags through the store, which keeps working after a context is gone.
// ThreadWorld (thread_world.h) reuses contexts across cases instead, for speed.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "gloo_lite/context.h"
#include "rendezvous/store.h"

namespace gloo_lite::test {

using RankBody = std::function<void(int rank, std::shared_ptr<Context>& context, Store& store)>;

// Runs body on `size` ranks at once, each on its own thread and context (one hash store, one
// loopback device, context timeout `timeout`). After its body a rank waits in a store barrier
// for the others before its context goes, so that no rank fails a peer by leaving early. An
// exception escaping a body is a test failure naming the rank. A run still going after `limit`
// is a hang the library's deadlines did not break: it names the stuck ranks and aborts the
// binary (threads cannot be cancelled).
void run_rank_threads(int size, const RankBody& body,
                      std::chrono::milliseconds limit = std::chrono::seconds(60),
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

// One-shot flags between the ranks of a run.
void raise_flag(Store& store, const std::string& name);
// True once the flag is raised; false when `timeout` passes first.
bool await_flag(Store& store, const std::string& name, std::chrono::milliseconds timeout);
// Every rank waits until all `size` have reached `name` (at most `timeout`); false on timeout.
bool meet(Store& store, const std::string& name, int rank, int size,
          std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace gloo_lite::test
