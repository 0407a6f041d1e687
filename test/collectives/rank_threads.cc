#include "test/collectives/rank_threads.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "gloo_lite/base/error.h"
#include "rendezvous/stores.h"
#include "test/collectives/rank_run.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {

void run_rank_threads(int size, const RankBody& body, std::chrono::milliseconds limit,
                      std::chrono::milliseconds timeout) {
  auto store = make_hash_store();
  auto device = loopback_device();
  ContextOptions options;
  options.timeout = timeout;
  std::mutex mutex;
  std::condition_variable done;
  std::vector<bool> busy(size, true);
  int running = size;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      std::shared_ptr<Context> context;
      try {
        context = Context::create(store, rank, size, device, options);
        body(rank, context, *store);
      } catch (const std::exception& error) {
        ADD_FAILURE() << "rank " << rank << " threw " << describe_exception(error);
      }
      if (!meet(*store, "run end", rank, size)) {
        ADD_FAILURE() << "rank " << rank << ": the other ranks did not finish within 30 s";
      }
      context.reset();
      std::lock_guard<std::mutex> lock(mutex);
      busy[rank] = false;
      --running;
      done.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (!done.wait_for(lock, limit, [&] { return running == 0; })) {
      std::string stuck;
      for (int rank = 0; rank < size; ++rank) {
        if (busy[rank]) stuck += " " + std::to_string(rank);
      }
      std::fprintf(stderr,
                   "FATAL: ranks%s of %d still running %lld ms after the test started, past "
                   "every deadline it set: a hang. Aborting the test binary.\n",
                   stuck.c_str(), size, static_cast<long long>(limit.count()));
      std::fflush(stderr);
      std::abort();
    }
  }
  for (auto& thread : threads) thread.join();
}

void raise_flag(Store& store, const std::string& name) {
  store.set("test/flag/" + name, {1}, Deadline::after(std::chrono::seconds(10)));
}

bool await_flag(Store& store, const std::string& name, std::chrono::milliseconds timeout) {
  try {
    store.wait({"test/flag/" + name}, Deadline::after(timeout));
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool meet(Store& store, const std::string& name, int rank, int size,
          std::chrono::milliseconds timeout) {
  std::string prefix = "test/meet/" + name + "/";
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(prefix + std::to_string(r));
  try {
    store.set(keys[rank], {1}, Deadline::after(std::chrono::seconds(10)));
    store.wait(keys, Deadline::after(timeout));
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace gloo_lite::test
