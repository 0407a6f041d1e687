#include "test/transport/harness.h"

#include <cstdlib>
#include <string>
#include "rendezvous/stores.h"

#include "gloo_lite/base/error.h"
#include "transport_shm/shm_device.h"
#include "transport_tcp/tcp_device.h"
#ifdef GLOO_LITE_HAVE_IBVERBS
#include "transport_ibverbs/ib_device.h"
#endif

namespace gloo_lite::test {

// GLOO_LITE_TEST_TRANSPORT=ibverbs runs the same tests on the RDMA device (e.g. rxe0 in the VM
// stage, test/vm/); its side channel then also uses loopback.
std::shared_ptr<transport::Device> loopback_device() {
  const char* chosen = std::getenv("GLOO_LITE_TEST_TRANSPORT");
  if (chosen != nullptr && std::string(chosen) == "ibverbs") {
#ifdef GLOO_LITE_HAVE_IBVERBS
    // A device per call, never cached: forked ranks must open their own verbs context.
    ibverbs::DeviceOptions options = ibverbs::options_from_env();
    options.hostname = "127.0.0.1";
    return ibverbs::create_device(options);
#else
    throw InvalidArgument(
        "GLOO_LITE_TEST_TRANSPORT=ibverbs, but gloo_lite was built without libibverbs");
#endif
  }
  // GLOO_LITE_TEST_TRANSPORT=shm: the shared-memory transport (every rank is on this host).
  if (chosen != nullptr && std::string(chosen) == "shm") return shm::create_device();
  tcp::DeviceOptions options;
  options.hostname = "127.0.0.1";
  return tcp::create_device(options);
}

std::vector<ProcessResult> run_context_processes(int ranks, const ContextBody& body,
                                                 std::chrono::milliseconds timeout,
                                                 ContextOptions options) {
  TempDir directory;
  return run_processes(
      ranks,
      [&](int rank) {
        auto store = make_file_store(directory.path());
        auto context = Context::create(store, rank, ranks, loopback_device(), options);
        body(*context);
      },
      timeout);
}

void run_context_threads(int ranks, const ContextBody& body, ContextOptions options) {
  auto store = make_hash_store();
  auto device = loopback_device();
  run_threads(ranks, [&](int rank) {
    auto context = Context::create(store, rank, ranks, device, options);
    body(*context);
  });
}

std::vector<uint8_t> make_pattern(int src, int dst, size_t bytes, uint64_t salt) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern_byte(src, dst, i, salt);
  return data;
}

long first_mismatch(const std::vector<uint8_t>& data, int src, int dst, uint64_t salt) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != pattern_byte(src, dst, i, salt)) return static_cast<long>(i);
  }
  return -1;
}

}  // namespace gloo_lite::test
