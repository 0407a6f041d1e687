// The knob table: every environment knob of gloo_lite, declared once with its default, meaning
// and allowed values (config.h). Reading and checking them is config.cc's.
#include <cstdint>
#include <vector>

#include "gloo_lite/base/config.h"

namespace gloo_lite {
namespace {

// Longest deadline a knob may ask for: 30 days. Far beyond any job, and far below where a
// deadline's clock arithmetic (nanoseconds in 64 bits, ~292 years) would overflow.
constexpr int64_t kMaxDeadlineMs = 30ll * 24 * 3600 * 1000;

constexpr KnobRule text() { return KnobRule{}; }
constexpr KnobRule integer(int64_t min, int64_t max) {
  return KnobRule{KnobKind::kInteger, min, max, 0, 0, ""};
}
constexpr KnobRule milliseconds(int64_t min, int64_t max) {
  return KnobRule{KnobKind::kMilliseconds, min, max, 0, 0, ""};
}
constexpr KnobRule bytes(int64_t min, int64_t max) {
  return KnobRule{KnobKind::kBytes, min, max, 0, 0, ""};
}
constexpr KnobRule number(double min, double max) {
  return KnobRule{KnobKind::kNumber, 0, 0, min, max, ""};
}
constexpr KnobRule on_off() { return KnobRule{KnobKind::kSwitch, 0, 0, 0, 0, ""}; }
constexpr KnobRule one_of(const char* words) {
  return KnobRule{KnobKind::kWord, 0, 0, 0, 0, words};
}
constexpr KnobRule list_of(const char* words) {
  return KnobRule{KnobKind::kWordList, 0, 0, 0, 0, words};
}
constexpr KnobRule algorithms() { return KnobRule{KnobKind::kAlgorithms, 0, 0, 0, 0, ""}; }

}  // namespace

const std::vector<Knob>& gloo_lite_knobs() {
  static const std::vector<Knob> knobs = {
      {"GLOO_LITE_STORE", "",
       "Rendezvous store URL: file:///dir, tcp://host:port or "
       "redis://[[user]:password@]host:port[/db]",
       text()},
      {"GLOO_LITE_REDIS_TTL_S", "3600",
       "Redis store: seconds until a key this process wrote expires, renewed every third of it "
       "while the process lives (0: never expire); a killed job's keys vanish within it",
       integer(0, 30 * 24 * 3600)},
      {"GLOO_LITE_RANK", "",
       "This process's rank (else RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, "
       "SLURM_PROCID)",
       integer(0, 1 << 24)},
      {"GLOO_LITE_SIZE", "",
       "Number of ranks (else WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, "
       "SLURM_NTASKS)",
       integer(1, 1 << 24)},
      {"GLOO_LITE_LOCAL_RANK", "", "Rank among the processes on this host (set by gloo_lite_run)",
       integer(0, 1 << 24)},
      {"GLOO_LITE_PREFIX", "", "Key prefix in the store, to separate jobs sharing one store",
       text()},
      {"GLOO_LITE_AUTH_SECRET", "",
       "Shared secret (16 bytes or more) every rank and the TCP store must prove they hold "
       "(docs/security.md); gloo_lite_run makes one per job unless --no-auth; unset: no "
       "authentication",
       text()},
      {"GLOO_LITE_AUTH_FILE", "",
       "File holding the shared secret instead of GLOO_LITE_AUTH_SECRET; refused unless only its "
       "owner can read it (chmod 600)",
       text()},
      {"GLOO_LITE_TLS_CERT", "",
       "PEM certificate of this process, signed by GLOO_LITE_TLS_CA; with GLOO_LITE_TLS_KEY and "
       "GLOO_LITE_TLS_CA set too, every TCP transport pair and TCP store connection runs over "
       "TLS 1.3 with mutual verification (docs/security.md); none set: plain TCP",
       text()},
      {"GLOO_LITE_TLS_KEY", "", "PEM private key of GLOO_LITE_TLS_CERT", text()},
      {"GLOO_LITE_TLS_CA", "",
       "PEM certificate of the CA that signed every rank's and the store's certificate; peers "
       "whose certificate it did not sign are refused",
       text()},
      {"GLOO_LITE_TIMEOUT_MS", "300000",
       "Default deadline for rendezvous and every operation, in milliseconds",
       milliseconds(1, kMaxDeadlineMs)},
      {"GLOO_LITE_STORE_CLIENT_BYTES", "67174400",
       "TCP store server: largest request body one client may send, bytes (default: the protocol "
       "limit, a 64 MiB value plus its key); larger requests are refused and the client dropped",
       bytes(1, 64 * kGiB)},
      {"GLOO_LITE_STORE_BUFFER_BYTES", "64M",
       "TCP store server: request bodies over 64 KiB buffered for all clients together; beyond "
       "it a client waits (first come, first served) until earlier bodies complete",
       bytes(1, 64 * kGiB)},
      {"GLOO_LITE_STORE_STALL_MS", "30000",
       "TCP store server: a client that leaves a request incomplete, or its response unread, "
       "this long is dropped (idle connections and waiting gets are not)",
       milliseconds(1, kMaxDeadlineMs)},
      {"GLOO_LITE_TRANSPORT", "auto",
       "Transport for every pair: shm, ibverbs (when built with libibverbs) or tcp; auto lets "
       "each pair take the first of those that can connect it",
       one_of("auto shm ibverbs tcp")},
      {"GLOO_LITE_IFNAME", "",
       "Interfaces to use: comma list of prefixes, ^ excludes, = exact (e.g. eth,^docker or =lo)",
       text()},
      {"GLOO_LITE_HOSTNAME", "",
       "Address to listen on and publish (host name or IP), overrides "
       "interface selection",
       text()},
      {"GLOO_LITE_TCP_EAGER_BYTES", "65536",
       "Messages up to this size are sent eagerly; larger ones wait for the receiver (rendezvous)",
       bytes(0, kGiB)},
      {"GLOO_LITE_TCP_EAGER_BYTES_ACROSS_HOSTS", "262144",
       "The eager bound on connections to other hosts, where it is the larger (a rendezvous "
       "round trip there waits behind the link's queue)",
       bytes(0, kGiB)},
      {"GLOO_LITE_TCP_UNEXPECTED_BYTES", "67108864",
       "Bound on eager payloads buffered before their receive is posted, per context; beyond it "
       "the sender is held back (TCP back-pressure), nothing is dropped",
       bytes(1, 64 * kGiB)},
      {"GLOO_LITE_TCP_SOCKET_BUFFER", "0", "SO_SNDBUF/SO_RCVBUF in bytes (0: kernel autotuning)",
       bytes(0, kGiB)},
      {"GLOO_LITE_TCP_SEGMENT_BYTES", "262144",
       "Largest payload of one TCP data frame: a rendezvous message leaves in segments of this "
       "size, and control frames (clear-to-send) pass between two of them",
       bytes(4 * kKiB, kGiB)},
      {"GLOO_LITE_TCP_NOTSENT_LOWAT", "131072",
       "TCP_NOTSENT_LOWAT in bytes, on connections to other hosts: how much unsent data a "
       "socket may hold before writes wait, so that a control frame does not queue behind "
       "megabytes in the kernel (0: the kernel's default, no bound)",
       bytes(0, kGiB)},
      {"GLOO_LITE_SHM_RING_BYTES", "262144",
       "Shared memory: bytes of each inbox ring (one per peer in each rank's segment, reserved "
       "at connect)",
       bytes(16 * kKiB, kGiB)},
      {"GLOO_LITE_SHM_EAGER_BYTES", "65536",
       "Shared memory: messages up to this size are copied through the ring; larger ones are "
       "read straight from the sender (at most a quarter of the ring)",
       bytes(0, kGiB)},
      {"GLOO_LITE_SHM_UNEXPECTED_BYTES", "67108864",
       "Shared memory: bound on eager payloads buffered before their receive is posted, per "
       "context; beyond it the sender waits for ring space, nothing is dropped",
       bytes(1, 64 * kGiB)},
      {"GLOO_LITE_SHM_CMA", "1",
       "Shared memory: 1 copies large messages once with process_vm_readv where the connect "
       "probe allows it; 0 always pipelines them through the ring",
       on_off()},
      {"GLOO_LITE_SHM_SPIN_US", "50",
       "Shared memory: microseconds a waiter polls its doorbell before sleeping, when this "
       "host has a CPU per local rank (otherwise it yields, then sleeps)",
       integer(0, 1000000)},
      {"GLOO_LITE_IB_DEVICE", "",
       "ibverbs: RDMA device and port, name[:port] (e.g. mlx5_0:1); default the first ACTIVE port",
       text()},
      {"GLOO_LITE_IB_GID_INDEX", "-1",
       "ibverbs: GID index; -1 picks RoCE v2 with an IPv4-mapped address (::ffff:a.b.c.d) first",
       integer(-1, 255)},
      {"GLOO_LITE_IB_RECV_DEPTH", "32",
       "ibverbs: credited receive buffers per peer (the sender never has more eager messages in "
       "flight)",
       integer(4, 65536)},
      {"GLOO_LITE_IB_BUFFER_BYTES", "8192",
       "ibverbs: size of one eager buffer, 32-byte header included; larger messages use "
       "rendezvous (RDMA WRITE WITH IMMEDIATE). Must be equal on every rank",
       bytes(256, kGiB)},
      {"GLOO_LITE_IB_PINNED_BYTES", "17179869184",
       "ibverbs: bound on user memory pinned by the registration cache, in bytes",
       bytes(kMiB, int64_t{1} << 50)},
      {"GLOO_LITE_IB_TIMEOUT", "17",
       "ibverbs: RC ack timeout exponent (4.096 us * 2^n per try); dead peers are detected by "
       "the side channel, not by retry exhaustion",
       integer(0, 31)},
      {"GLOO_LITE_IB_RETRY_COUNT", "7", "ibverbs: RC transport retries before a send fails",
       integer(0, 7)},
      {"GLOO_LITE_IB_BUSY_POLL", "0",
       "ibverbs: 1 is GLOO_LITE_IB_SPIN_US without a bound: waiters poll the completion queue "
       "until their requests are done and never sleep (one core per waiter)",
       on_off()},
      {"GLOO_LITE_IB_SPIN_US", "0",
       "ibverbs: a waiter polls the completion queue, yielding the CPU between polls, for at most "
       "this many microseconds before it sleeps (0: sleep at once; the budget adapts below the "
       "bound, as GLOO_LITE_SPIN_US's)",
       integer(0, 1000000)},
      {"GLOO_LITE_SPIN_US", "",
       "TCP: a waiting rank polls its sockets for at most this many microseconds before it "
       "sleeps (0: never poll; unset: 50 with a core per rank on the host, 100 yielding the CPU "
       "between polls when ranks outnumber cores; the budget adapts below the bound)",
       integer(0, 1000000)},
      {"GLOO_LITE_SHM_COLLECTIVES", "1",
       "1: collectives of a context whose ranks all share one host may run in a shared memory "
       "segment (algorithm shm), unless GLOO_LITE_TRANSPORT forces a network transport; 0: never",
       on_off()},
      {"GLOO_LITE_SHM_CHUNK_BYTES", "256K",
       "Shared-memory collectives: bytes per rank and step; each stream's segment holds "
       "2 * ranks * this",
       bytes(4096, kGiB)},
      {"GLOO_LITE_HOST_ID", "",
       "Overrides this process's host identity (the kernel's boot id), e.g. to make ranks of "
       "one machine look like several hosts in tests",
       text()},
      {"GLOO_LITE_ALGO", "",
       "Algorithm per collective, overriding auto: \"allreduce:ring;broadcast:tree\" or one name "
       "for every collective that has it",
       algorithms()},
      {"GLOO_LITE_CHECK", "0",
       "1: ranks compare each collective's fingerprint (collective, type, count, root, op) "
       "before moving data and raise MismatchError on disagreement",
       on_off()},
      {"GLOO_LITE_FLIGHT_RECORDS", "64",
       "Collectives each context remembers for its flight recorder (dumped on failure; 0: off)",
       integer(0, 1 << 20)},
      {"GLOO_LITE_FLIGHT_SIGNAL", "",
       "Signal that makes every live context of a rank dump its flight recorder to stderr: USR1, "
       "USR2 (SIG prefix optional), RTMIN+n or such a signal's number; empty or off: none "
       "(gloo_lite_run sets USR1 and forwards a SIGUSR1 it gets to every rank)",
       text()},
      {"GLOO_LITE_ALPHA_US", "30", "Cost model: latency of one message step, microseconds",
       number(0, 1e6)},
      {"GLOO_LITE_OVERHEAD_US", "35",
       "Cost model: CPU time one message costs its host (send, receive, wake-up), "
       "microseconds; matters where ranks outnumber cores",
       number(0, 1e6)},
      {"GLOO_LITE_CORES", "0",
       "CPUs per host the cost model assumes (0: those this process may run on, from its "
       "affinity mask)",
       integer(0, 1 << 20)},
      {"GLOO_LITE_BETA_GBPS", "1.5", "Cost model: point-to-point bandwidth, GB/s",
       number(1e-6, 1e6)},
      {"GLOO_LITE_SHM_ALPHA_US", "1",
       "Cost model: latency of one step between ranks of one host over shared memory (a flag "
       "seen by its reader), microseconds",
       number(0, 1e6)},
      {"GLOO_LITE_SHM_BETA_GBPS", "6",
       "Cost model: copy bandwidth between ranks of one host over shared memory, GB/s",
       number(1e-6, 1e6)},
      {"GLOO_LITE_WAIT_US", "10",
       "Cost model: the part of GLOO_LITE_ALPHA_US a rank waits for a message it must receive "
       "before it may send; a step that waits for nothing costs alpha minus it, microseconds",
       number(0, 1e6)},
      {"GLOO_LITE_NET_ALPHA_US", "0",
       "Cost model: latency of one message step between ranks of different hosts, microseconds "
       "(0: GLOO_LITE_ALPHA_US)",
       number(0, 1e6)},
      {"GLOO_LITE_NET_BETA_GBPS", "0",
       "Cost model: bandwidth of one host's link to the others, GB/s, shared by the host's ranks "
       "(0: measured when a context that spans several hosts is created, about 2 MiB each way "
       "between neighbouring hosts; a single-host context measures nothing)",
       number(0, 1e6)},
      {"GLOO_LITE_NET_CHANGING", "0.6",
       "Cost model: the fraction of a host link's rate reached across hosts by algorithms whose "
       "ranks send to another peer in each step or to every peer at once (halving and recursive "
       "doubling, bruck, pairwise, direct), against the ring's and the tree's fixed neighbours "
       "(measured 0.5-0.75 from 1 MiB on 8 hosts at 200 Mbit/s)",
       number(0.01, 1)},
      {"GLOO_LITE_GAMMA_GBPS", "20",
       "Cost model: reduction throughput, GB/s of input (chunks are cache-resident)",
       number(1e-6, 1e6)},
      {"GLOO_LITE_CUDA_GPUDIRECT", "1",
       "CUDA collectives: hand device memory straight to the transport (send/recv, broadcast, "
       "allgather) where every pair can register it (ibverbs with nvidia_peermem); 0: always "
       "stage through pinned host memory",
       on_off()},
      {"GLOO_LITE_CUDA_COPY_GBPS", "0",
       "CUDA collectives: pinned host<->device copy bandwidth the reduction placement assumes, "
       "GB/s (0: measured when a Communicator is created)",
       number(0, 1e6)},
      {"GLOO_LITE_CUDA_KERNEL_GBPS", "0",
       "CUDA collectives: device reduction throughput the reduction placement assumes, GB/s of "
       "input (0: measured when a Communicator is created)",
       number(0, 1e6)},
      {"GLOO_LITE_CUDA_HOST_REDUCE_GBPS", "0",
       "CUDA collectives: CPU reduction throughput the reduction placement assumes, GB/s of "
       "input (0: measured when a Communicator is created)",
       number(0, 1e6)},
      {"GLOO_LITE_SIMD", "auto", "Reduction kernels: auto (by CPU features) or portable",
       one_of("auto portable")},
      {"GLOO_LITE_LOG", "warn", "Log level: error, warn, info, debug, trace",
       one_of("error warn info debug trace")},
      {"GLOO_LITE_LOG_SUBSYS", "all",
       "Comma list of subsystems to log (store, tcp, ibverbs, shm, context, launcher, coll, "
       "config) "
       "or all",
       list_of("all store tcp ibverbs shm context launcher coll config")},
  };
  return knobs;
}

// Built during static initialisation, while the process has one thread. Built lazily instead,
// its first use could fall on a background thread (the TCP store server's first log line) just
// as another thread forks: the child then inherits the initialisation guard held by a thread it
// does not have, and hangs at its first knob (ASan run of StoreAcrossProcesses, children stuck
// in __cxa_guard_acquire).
[[maybe_unused]] static const bool kKnobTableBuilt = (gloo_lite_knobs(), true);

const Knob* find_knob(const std::string& name) {
  for (const auto& knob : gloo_lite_knobs()) {
    if (name == knob.name) return &knob;
  }
  return nullptr;
}

}  // namespace gloo_lite
