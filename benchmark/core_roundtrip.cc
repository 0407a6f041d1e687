// gloo_lite_core_roundtrip: how long one cache line takes to go from CPU 0 to CPU 1 and back.
// Two threads, pinned one per CPU, bounce a counter. On a virtual machine this tells where the
// host put the two vCPUs: ~100 ns when they share a core complex (and its cache), 250-500 ns
// when they do not. The shm collectives move data from cache to cache, so their speed follows
// it (2-2.5x at 2 MiB, docs/algorithms.md, "This machine's two speeds"); benchmark/auto_sweep
// records it before and after every run to compare only runs made at one speed.
//
//   gloo_lite_core_roundtrip [rounds]     prints "<ns> ns per round trip (CPU 0 <-> CPU 1)"
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

// A failed pin (one CPU only, a restricted cpuset) leaves the thread where it is: the number
// then says so itself (a round trip on one CPU costs two context switches).
void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

alignas(64) std::atomic<long> counter{0};

}  // namespace

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 100000;
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: gloo_lite_core_roundtrip [rounds > 0]\n");
    return 2;
  }
  if (std::thread::hardware_concurrency() < 2) {
    std::fprintf(stderr, "gloo_lite_core_roundtrip: needs two CPUs (both threads spin)\n");
    return 2;
  }
  std::thread echo([rounds] {
    pin_to(1);
    for (long i = 0; i < rounds; ++i) {
      while (counter.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      counter.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin_to(0);
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < rounds; ++i) {
    counter.store(2 * i + 1, std::memory_order_release);
    while (counter.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  echo.join();
  std::printf("%.1f ns per round trip (CPU 0 <-> CPU 1)\n", took.count() / rounds);
  return 0;
}
