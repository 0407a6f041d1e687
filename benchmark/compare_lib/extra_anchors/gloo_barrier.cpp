// gloo_barrier: barrier latency of Debian's Gloo over TCP on 127.0.0.1, for benchmark/compare.
// The anchors' gloo_bench has no barrier, so compare builds this next to the copied anchors
// (same compiler flags, same library) and runs it like gloo_bench. It is never linked into
// gloo_lite.
//
// Usage (the same argument list as the anchors' gloo_bench, COLL must be "barrier"):
//   gloo_barrier RANK SIZE STORE_DIR ALGO barrier SIZES [MIN_TIME_S] [MIN_ITERS] [MAX_ITERS]
//   ALGO: opts        gloo::barrier(BarrierOptions)
//         all_to_all  gloo::BarrierAllToAll (legacy)
//         all_to_one  gloo::BarrierAllToOne (legacy, root 0)
//   SIZES is ignored (one row, bytes = 0).
// Timing as in gloo_bench: warm-up (20 ops), a ~50 ms pilot to pick ITERS on rank 0, then ITERS
// timed barriers after a helper barrier; time = max over ranks of elapsed / ITERS.
// Output (rank 0): the anchors' CSV, lib,algo,coll,P,bytes,count,iters,time_us,algbw_GBps,
// busbw_GBps,wrong with bytes = count = 0 and zero bandwidths.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

namespace {

double now_s() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

constexpr uint32_t kTagBarrier = 101;
constexpr uint32_t kTagCtrl = 102;
constexpr uint32_t kTagMax = 103;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr,
            "usage: %s RANK SIZE STORE_DIR ALGO barrier SIZES [MIN_TIME_S] [MIN_ITERS] "
            "[MAX_ITERS]\n",
            argv[0]);
    return 1;
  }
  const int rank = atoi(argv[1]);
  const int P = atoi(argv[2]);
  const std::string storeDir = argv[3];
  const std::string algo = argv[4];
  const std::string coll = argv[5];
  const double minTime = argc > 7 ? atof(argv[7]) : 0.2;
  const int64_t minIters = argc > 8 ? atoll(argv[8]) : 5;
  const int64_t maxIters = argc > 9 ? atoll(argv[9]) : 100000;
  if (coll != "barrier") {
    fprintf(stderr, "gloo_barrier only runs COLL=barrier, not %s\n", coll.c_str());
    return 1;
  }

  gloo::transport::tcp::attr attr;
  // The address to listen on and publish: loopback unless GLOO_ANCHOR_HOSTNAME names another
  // (benchmark/cluster runs each rank in its own network namespace).
  const char* hostname = std::getenv("GLOO_ANCHOR_HOSTNAME");
  attr.hostname = hostname != nullptr && *hostname != '\0' ? hostname : "127.0.0.1";
  attr.ai_family = AF_INET;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(storeDir);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, P);
  ctx->setTimeout(std::chrono::milliseconds(600000));
  ctx->connectFullMesh(store, dev);

  auto helperBarrier = [&]() {
    gloo::BarrierOptions o(ctx);
    o.setTag(kTagBarrier);
    gloo::barrier(o);
  };
  auto bcast = [&](int64_t v) {
    gloo::BroadcastOptions o(ctx);
    o.setOutput(&v, 1);
    o.setRoot(0);
    o.setTag(kTagCtrl);
    gloo::broadcast(o);
    return v;
  };
  auto maxF64 = [&](double v) {
    gloo::AllreduceOptions o(ctx);
    o.setOutput(&v, 1);
    o.setTag(kTagMax);
    o.setReduceFunction([](void* c, const void* a, const void* b, size_t n) {
      auto* C = static_cast<double*>(c);
      auto* A = static_cast<const double*>(a);
      auto* B = static_cast<const double*>(b);
      for (size_t i = 0; i < n; i++) C[i] = std::max(A[i], B[i]);
    });
    gloo::allreduce(o);
    return v;
  };

  std::unique_ptr<gloo::Algorithm> legacy;
  std::function<void()> op;
  if (algo == "opts") {
    op = [&ctx]() {
      gloo::BarrierOptions o(ctx);
      o.setTag(0);
      gloo::barrier(o);
    };
  } else if (algo == "all_to_all") {
    legacy.reset(new gloo::BarrierAllToAll(ctx));
    op = [&legacy]() { legacy->run(); };
  } else if (algo == "all_to_one") {
    legacy.reset(new gloo::BarrierAllToOne(ctx, 0));
    op = [&legacy]() { legacy->run(); };
  } else {
    fprintf(stderr, "unknown barrier algo %s\n", algo.c_str());
    return 1;
  }

  helperBarrier();
  if (rank == 0) {
    printf(
        "# gloo tcp 127.0.0.1 coll=barrier algo=%s P=%d min_time=%.3f min_iters=%lld "
        "(benchmark/compare extra)\n",
        algo.c_str(), P, minTime, (long long)minIters);
    printf("lib,algo,coll,P,bytes,count,iters,time_us,algbw_GBps,busbw_GBps,wrong\n");
    fflush(stdout);
  }

  const int64_t warm = 20;
  helperBarrier();
  double w0 = now_s();
  for (int64_t i = 0; i < warm; i++) op();
  double wt = (now_s() - w0) / warm;
  int64_t iters = minIters;
  if (minTime > 0) {
    int64_t pilot = 0;
    if (rank == 0) {
      pilot = (int64_t)std::ceil(0.05 / std::max(wt, 1e-9));
      pilot = std::max<int64_t>(1, std::min(maxIters, pilot));
    }
    pilot = bcast(pilot);
    helperBarrier();
    double p0 = now_s();
    for (int64_t i = 0; i < pilot; i++) op();
    double pt = (now_s() - p0) / pilot;
    if (rank == 0) {
      iters = (int64_t)std::ceil(minTime / std::max(pt, 1e-9));
      iters = std::max(minIters, std::min(maxIters, iters));
    }
    iters = bcast(iters);
  }

  helperBarrier();
  double t0 = now_s();
  for (int64_t i = 0; i < iters; i++) op();
  double el = (now_s() - t0) / iters;
  double t = maxF64(el);
  if (rank == 0) {
    printf("gloo,%s,barrier,%d,0,0,%lld,%.2f,0.0000,0.0000,0\n", algo.c_str(), P, (long long)iters,
           t * 1e6);
    fflush(stdout);
  }
  helperBarrier();
  return 0;
}
