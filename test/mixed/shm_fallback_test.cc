// Shared memory that cannot be had falls back to the next transport (or to the message
// algorithms), with one warning, on every rank alike; with GLOO_LITE_TRANSPORT=shm it stays an
// error. The failures are real: a file-size limit (RLIMIT_FSIZE: the kernel refuses to size a
// segment past it, EFBIG) and a seccomp filter under which the kernel refuses the fallocate of
// one inbox (ENOSPC, as a full memory limit would). Ranks are processes of this host, through
// the bootstrap's transport table (create_device_from_env); each writes its log to a file, which
// the test reads back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/context_engine.h"
#include "rendezvous/stores.h"
#include "test/support/test_support.h"
#include "transport_shm/segment.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;

constexpr int kRanks = 3;
constexpr uint32_t kRingBytes = 262144;   // GLOO_LITE_SHM_RING_BYTES's default
constexpr rlim_t kFileLimit = 64 * 1024;  // below every segment here, above the store's files

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// No file this process writes may grow past kFileLimit (a segment is sized like a file).
void limit_file_size() {
  signal(SIGXFSZ, SIG_IGN);  // the kernel's EFBIG is what we want, not the signal
  rlimit limit{kFileLimit, kFileLimit};
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
}

// From now on the kernel fails fallocate() at exactly `offset` with ENOSPC (and allows every
// other call). Nothing of gloo_lite is replaced: its posix_fallocate gets the kernel's error.
void fail_fallocate_at(uint64_t offset) {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  FAIL() << "no seccomp architecture for this build";
  constexpr uint32_t kArch = 0;
#endif
  const auto low = static_cast<uint32_t>(offset);
  const auto high = static_cast<uint32_t>(offset >> 32);
  constexpr uint32_t kOffsetArg = offsetof(seccomp_data, args) + 2 * sizeof(uint64_t);
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fallocate, 0, 5),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kOffsetArg),  // little-endian: the low half first
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, low, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kOffsetArg + 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, high, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSPC & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  ASSERT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
  ASSERT_EQ(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program), 0) << std::strerror(errno);
}

// Whether this kernel lets a process install the filter above (a container may forbid it).
bool seccomp_filters_work() {
  auto results = run_processes(
      1, [](int) { fail_fallocate_at(uint64_t{1} << 50); }, seconds(10));
  return results.size() == 1 && results[0].ok();
}

struct Rank {
  Context* context = nullptr;  // null when create failed (then `error` says why)
  std::string error;
  std::string log;  // what this rank logged until now
  std::string log_path;
};

// Runs `body` on kRanks processes of this host with the automatic table (or `transport`):
// `prepare(rank)` first (a limit, a filter), then the context, whose creation may throw (the
// body then gets a null context and the error). Each rank's stderr goes to a file.
std::vector<ProcessResult> run_ranks(const std::function<void(int)>& prepare,
                                     const std::function<void(int, Rank&)>& body,
                                     const char* transport = nullptr, int ranks = kRanks) {
  TempDir directory;
  return run_processes(
      ranks,
      [&](int rank) {
        Rank me;
        me.log_path = directory.path() + "/log." + std::to_string(rank);
        int fd = ::open(me.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(dup2(fd, 2), 2);
        ::close(fd);
        unsetenv("GLOO_LITE_HOST_ID");
        unsetenv("GLOO_LITE_LOG");
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        if (transport != nullptr) {
          setenv("GLOO_LITE_TRANSPORT", transport, 1);
        } else {
          unsetenv("GLOO_LITE_TRANSPORT");
        }
        prepare(rank);
        ContextOptions options;
        options.timeout = seconds(transport != nullptr ? 5 : 30);
        std::shared_ptr<Context> context;
        try {
          context = Context::create(make_file_store(directory.path()), rank, ranks,
                                    create_device_from_env(), options);
        } catch (const Error& e) {
          me.error = e.what();
        }
        me.context = context.get();
        me.log = read_file(me.log_path);
        body(rank, me);
      },
      seconds(90));
}

// An allreduce over every pair (ring: messages between neighbours, shm and TCP alike) and the
// default algorithm, against the sums computed here.
void expect_allreduce_right(Context& context, const char* algorithm) {
  CollectiveOptions options;
  options.algorithm = algorithm;
  std::vector<int64_t> data(50001);
  for (size_t i = 0; i < data.size(); ++i) data[i] = int64_t(i) * (context.rank() + 1);
  allreduce(context, data.data(), data.data(), data.size(), DataType::kInt64, ReduceOp::kSum,
            options);
  const int64_t factor = kRanks * (kRanks + 1) / 2;
  for (size_t i = 0; i < data.size(); i += 997) {
    ASSERT_EQ(data[i], int64_t(i) * factor) << algorithm << " element " << i;
  }
  ASSERT_EQ(data.back(), int64_t(data.size() - 1) * factor) << algorithm;
}

// Rank 1 cannot size its transport segment: its pairs take TCP, ranks 0 and 2 keep shared
// memory between them, and only rank 1 warns, with the size it asked for and the kernel's words.
TEST(ShmFallback, SegmentThatCannotBeSizedSendsThatRanksPairsOverTcp) {
  const auto segment = shm::Layout::of(kRanks, kRingBytes).segment_bytes;
  expect_all_ok(run_ranks(
      [](int rank) {
        if (rank == 1) limit_file_size();
      },
      [&](int rank, Rank& me) {
        ASSERT_NE(me.context, nullptr) << me.error;
        Context& context = *me.context;
        for (int peer = 0; peer < kRanks; ++peer) {
          if (peer == rank) continue;
          const bool tcp = rank == 1 || peer == 1;
          EXPECT_EQ(engine_of(context).mesh().transport_of(peer), tcp ? "tcp" : "shm")
              << "rank " << rank << " for rank " << peer;
        }
        expect_allreduce_right(context, "ring");
        expect_allreduce_right(context, "auto");
        barrier(context);
        std::string log = read_file(me.log_path);
        if (rank == 1) {
          EXPECT_TRUE(contains(log, "WARN")) << log;
          EXPECT_TRUE(contains(log, "shm is unavailable on this rank")) << log;
          EXPECT_TRUE(contains(log, std::to_string(segment) + " bytes")) << log;
          EXPECT_TRUE(contains(log, std::strerror(EFBIG))) << log;
          EXPECT_TRUE(contains(log, "ranks 0, 2, which offer shm")) << log;
          EXPECT_TRUE(contains(log, "tcp for ranks 0, 2")) << log;
        } else {
          EXPECT_FALSE(contains(log, "WARN")) << log;
        }
      }));
}

// Rank 1 cannot reserve the inbox of rank 2 in its segment (ENOSPC from the kernel): that pair
// alone takes TCP, on both ends, and rank 1 warns naming the pair, the bytes and the errno.
TEST(ShmFallback, InboxThatCannotBeReservedSendsThatPairOverTcp) {
  if (!seccomp_filters_work()) GTEST_SKIP() << "seccomp filters cannot be installed here";
  const auto layout = shm::Layout::of(kRanks, kRingBytes);
  expect_all_ok(run_ranks(
      [&](int rank) {
        if (rank == 1) fail_fallocate_at(layout.inbox_offset(2));
      },
      [&](int rank, Rank& me) {
        ASSERT_NE(me.context, nullptr) << me.error;
        Context& context = *me.context;
        for (int peer = 0; peer < kRanks; ++peer) {
          if (peer == rank) continue;
          const bool tcp = (rank == 1 && peer == 2) || (rank == 2 && peer == 1);
          EXPECT_EQ(engine_of(context).mesh().transport_of(peer), tcp ? "tcp" : "shm")
              << "rank " << rank << " for rank " << peer;
        }
        expect_allreduce_right(context, "ring");
        expect_allreduce_right(context, "auto");
        barrier(context);
        std::string log = read_file(me.log_path);
        if (rank == 1) {
          EXPECT_TRUE(contains(log, "WARN")) << log;
          EXPECT_TRUE(contains(
              log, "cannot reserve " + std::to_string(layout.inbox_stride) +
                       " bytes of shared memory for the inbox of rank 2: " + std::strerror(ENOSPC)))
              << log;
          EXPECT_TRUE(contains(log, "ranks 1 and 2 use tcp instead of shm")) << log;
        } else {
          EXPECT_FALSE(contains(log, "WARN")) << log;
        }
      }));
}

// Rank 0 cannot size the shared-memory collectives' segment either (nor its transport
// segment): every rank runs the message algorithms, rank 0 warns, and the results are right.
TEST(ShmFallback, HostSegmentThatCannotBeCreatedRunsTheMessageAlgorithms) {
  expect_all_ok(run_ranks(
      [](int rank) {
        if (rank == 0) limit_file_size();
      },
      [&](int rank, Rank& me) {
        ASSERT_NE(me.context, nullptr) << me.error;
        Context& context = *me.context;
        expect_allreduce_right(context, "shm");
        expect_allreduce_right(context, "auto");
        barrier(context);
        std::string log = read_file(me.log_path);
        if (rank == 0) {
          EXPECT_TRUE(contains(log, "shm is unavailable on this rank")) << log;
          EXPECT_TRUE(contains(log, "using the message algorithms instead")) << log;
          EXPECT_TRUE(contains(log, std::strerror(EFBIG))) << log;
        } else {
          EXPECT_FALSE(contains(log, "WARN")) << log;
        }
      }));
}

// The same with rank 2 late to the call: ranks 0 and 1 wait for its verdict with probes posted
// (zero-byte receives under the call's tag). Rank 2 then finds every verdict in and starts the
// message algorithm at once; its first message must not fall into a probe (it did: a size
// mismatch that failed every rank), so no rank sends before all have taken theirs back.
TEST(ShmFallback, LateRankStartsTheMessageAlgorithmSafely) {
  expect_all_ok(run_ranks(
      [](int rank) {
        if (rank == 0) limit_file_size();
      },
      [&](int rank, Rank& me) {
        ASSERT_NE(me.context, nullptr) << me.error;
        if (rank == 2) usleep(300 * 1000);
        expect_allreduce_right(*me.context, "shm");
        barrier(*me.context);
      }));
}

// Forced, the same failures stay errors that say what happened: no fallback.
TEST(ShmFallback, ForcedShmFailsClearly) {
  expect_all_ok(run_ranks(
      [](int rank) {
        if (rank == 1) limit_file_size();
      },
      [](int rank, Rank& me) {
        EXPECT_EQ(me.context, nullptr) << "rank " << rank;
        if (rank == 1) {
          EXPECT_TRUE(contains(me.error, "cannot size a shared-memory segment")) << me.error;
          EXPECT_TRUE(contains(me.error, std::strerror(EFBIG))) << me.error;
        }
      },
      "shm", 2));
  if (!seccomp_filters_work()) GTEST_SKIP() << "seccomp filters cannot be installed here";
  const auto layout = shm::Layout::of(2, kRingBytes);
  expect_all_ok(run_ranks(
      [&](int rank) {
        if (rank == 1) fail_fallocate_at(layout.inbox_offset(0));
      },
      [&](int rank, Rank& me) {
        EXPECT_EQ(me.context, nullptr) << "rank " << rank;
        if (rank == 1) {
          EXPECT_TRUE(contains(me.error, "cannot reserve " + std::to_string(layout.inbox_stride) +
                                             " bytes of shared memory for the inbox of rank 0"))
              << me.error;
          EXPECT_TRUE(contains(me.error, "GLOO_LITE_TRANSPORT=tcp")) << me.error;
        }
      },
      "shm", 2));
}

}  // namespace
}  // namespace gloo_lite::test
