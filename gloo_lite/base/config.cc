#include "gloo_lite/base/config.h"

#include <cstdlib>
#include <cstring>

#include "gloo_lite/base/error.h"

namespace gloo_lite {

const std::vector<Knob>& gloo_lite_knobs() {
  static const std::vector<Knob> knobs = {
      {"GLOO_LITE_STORE", "",
       "Rendezvous store URL: file:///dir, tcp://host:port or redis://[:password@]host:port[/db]"},
      {"GLOO_LITE_RANK", "",
       "This process's rank (else RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, "
       "SLURM_PROCID)"},
      {"GLOO_LITE_SIZE", "",
       "Number of ranks (else WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, "
       "SLURM_NTASKS)"},
      {"GLOO_LITE_LOCAL_RANK", "", "Rank among the processes on this host (set by gloo_lite_run)"},
      {"GLOO_LITE_PREFIX", "", "Key prefix in the store, to separate jobs sharing one store"},
      {"GLOO_LITE_TIMEOUT_MS", "300000",
       "Default deadline for rendezvous and every operation, in milliseconds"},
      {"GLOO_LITE_TRANSPORT", "tcp", "Transport: tcp, or ibverbs (when built with libibverbs)"},
      {"GLOO_LITE_IFNAME", "",
       "Interfaces to use: comma list of prefixes, ^ excludes, = exact (e.g. eth,^docker or =lo)"},
      {"GLOO_LITE_HOSTNAME", "",
       "Address to listen on and publish (host name or IP), overrides "
       "interface selection"},
      {"GLOO_LITE_TCP_EAGER_BYTES", "65536",
       "Messages up to this size are sent eagerly; larger ones wait for the receiver (rendezvous)"},
      {"GLOO_LITE_TCP_UNEXPECTED_BYTES", "67108864",
       "Bound on eager payloads buffered before their receive is posted, per context; beyond it "
       "the sender is held back (TCP back-pressure), nothing is dropped"},
      {"GLOO_LITE_TCP_SOCKET_BUFFER", "0", "SO_SNDBUF/SO_RCVBUF in bytes (0: kernel autotuning)"},
      {"GLOO_LITE_IB_DEVICE", "",
       "ibverbs: RDMA device and port, name[:port] (e.g. mlx5_0:1); default the first ACTIVE port"},
      {"GLOO_LITE_IB_GID_INDEX", "-1",
       "ibverbs: GID index; -1 picks RoCE v2 with an IPv4-mapped address (::ffff:a.b.c.d) first"},
      {"GLOO_LITE_IB_RECV_DEPTH", "32",
       "ibverbs: credited receive buffers per peer (the sender never has more eager messages in "
       "flight)"},
      {"GLOO_LITE_IB_BUFFER_BYTES", "8192",
       "ibverbs: size of one eager buffer, 32-byte header included; larger messages use "
       "rendezvous (RDMA WRITE WITH IMMEDIATE). Must be equal on every rank"},
      {"GLOO_LITE_IB_PINNED_BYTES", "17179869184",
       "ibverbs: bound on user memory pinned by the registration cache, in bytes"},
      {"GLOO_LITE_IB_TIMEOUT", "17",
       "ibverbs: RC ack timeout exponent (4.096 us * 2^n per try); dead peers are detected by "
       "the side channel, not by retry exhaustion"},
      {"GLOO_LITE_IB_RETRY_COUNT", "7", "ibverbs: RC transport retries before a send fails"},
      {"GLOO_LITE_IB_BUSY_POLL", "0",
       "ibverbs: 1 makes waiters poll the completion queue without sleeping (one core per waiter)"},
      {"GLOO_LITE_IB_SPIN_US", "0",
       "ibverbs: microseconds a waiter polls the completion queue before sleeping on the "
       "completion channel"},
      {"GLOO_LITE_SPIN_US", "0",
       "A waiting rank polls its sockets without sleeping for up to this many microseconds "
       "before it blocks (0: never spin; worth it only with a spare core per rank)"},
      {"GLOO_LITE_ALGO", "",
       "Algorithm per collective, overriding auto: \"allreduce:ring;broadcast:tree\" or one name "
       "for every collective that has it"},
      {"GLOO_LITE_CHECK", "0",
       "1: ranks compare each collective's fingerprint (collective, type, count, root, op) "
       "before moving data and raise MismatchError on disagreement"},
      {"GLOO_LITE_ALPHA_US", "30", "Cost model: latency of one message step, microseconds"},
      {"GLOO_LITE_OVERHEAD_US", "35",
       "Cost model: CPU time one message costs its host (send, receive, wake-up), "
       "microseconds; matters where ranks outnumber cores"},
      {"GLOO_LITE_CORES", "0",
       "CPUs per host the cost model assumes (0: those this process may run on, from its "
       "affinity mask)"},
      {"GLOO_LITE_BETA_GBPS", "1.5", "Cost model: point-to-point bandwidth, GB/s"},
      {"GLOO_LITE_GAMMA_GBPS", "20",
       "Cost model: reduction throughput, GB/s of input (chunks are cache-resident)"},
      {"GLOO_LITE_SIMD", "auto", "Reduction kernels: auto (by CPU features) or portable"},
      {"GLOO_LITE_LOG", "warn", "Log level: error, warn, info, debug, trace"},
      {"GLOO_LITE_LOG_SUBSYS", "all",
       "Comma list of subsystems to log (store, tcp, context, launcher, coll) or all"},
  };
  return knobs;
}

// Built during static initialisation, while the process has one thread. Built lazily instead,
// its first use could fall on a background thread (the TCP store server's first log line) just
// as another thread forks: the child then inherits the initialisation guard held by a thread it
// does not have, and hangs at its first knob (ASan run of StoreAcrossProcesses, children stuck
// in __cxa_guard_acquire).
[[maybe_unused]] static const bool kKnobTableBuilt = (gloo_lite_knobs(), true);

static const Knob& find_knob(const char* name) {
  for (const auto& knob : gloo_lite_knobs()) {
    if (std::strcmp(knob.name, name) == 0) return knob;
  }
  throw InvalidArgument(std::string("internal: undeclared knob ") + name);
}

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string knob_string(const char* name) {
  const Knob& knob = find_knob(name);
  if (auto value = env_value(name)) return *value;
  return knob.default_value;
}

int64_t knob_int(const char* name) {
  std::string text = knob_string(name);
  if (text.empty()) return 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') {
    throw InvalidArgument(std::string(name) + "='" + text + "' is not an integer");
  }
  return value;
}

double knob_double(const char* name) {
  std::string text = knob_string(name);
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    throw InvalidArgument(std::string(name) + "='" + text + "' is not a number");
  }
  return value;
}

std::chrono::milliseconds knob_ms(const char* name) {
  return std::chrono::milliseconds(knob_int(name));
}

bool knob_bool(const char* name) {
  std::string text = knob_string(name);
  return !(text.empty() || text == "0" || text == "false" || text == "no" || text == "off");
}

uint64_t parse_bytes(const std::string& text, const char* what) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str())
    throw InvalidArgument(std::string(what) + ": '" + text + "' is not a size");
  uint64_t scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = 1ull << 30, ++end;
  if (*end != '\0') throw InvalidArgument(std::string(what) + ": '" + text + "' is not a size");
  return value * scale;
}

}  // namespace gloo_lite
