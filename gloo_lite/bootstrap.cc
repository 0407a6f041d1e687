#include "gloo_lite/bootstrap.h"

#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <utility>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/knobs.h"
#include "gloo_lite/transport/mixed_device.h"
#include "gloo_lite/transport/names.h"
#include "gloo_lite/transport/table.h"
#include "rendezvous/store_url.h"
#include "rendezvous/stores.h"

namespace gloo_lite {
namespace {

// The variables one launcher sets. Empty names mean "this launcher has no such variable".
struct LauncherFlavour {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
};

// Precedence order: our own variables first (gloo_lite_run, or a user overriding a launcher),
// then the launchers. Open MPI also exports PMI variables under some setups, so it precedes PMI.
constexpr LauncherFlavour kFlavours[] = {
    {"GLOO_LITE_RANK/GLOO_LITE_SIZE", "GLOO_LITE_RANK", "GLOO_LITE_SIZE", "GLOO_LITE_LOCAL_RANK"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI", "PMI_RANK", "PMI_SIZE", ""},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

// Strict decimal parse: the whole value, no sign games, within int.
bool parse_int(const std::string& text, int* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  if (value < INT_MIN || value > INT_MAX) return false;
  *out = static_cast<int>(value);
  return true;
}

std::string read_var(const char* name) {
  if (name == nullptr || *name == '\0') return "";
  return env_value(name).value_or("");
}

int parse_var(const LauncherFlavour& flavour, const char* name, const std::string& text) {
  int value = 0;
  if (!parse_int(text, &value)) {
    throw InvalidArgument(std::string(name) + "='" + text + "' (from " + flavour.source +
                          ") is not an integer; set it to a whole number, e.g. " + name + "=0");
  }
  return value;
}

// Under torchrun, MASTER_PORT belongs to torch's own TCPStore, whose protocol is not ours. Our
// convention: rank 0 hosts a gloo_lite store on MASTER_PORT + 1 of MASTER_ADDR (see README).
std::string torchrun_store_url(LaunchInfo* info) {
  std::string addr = read_var("MASTER_ADDR");
  std::string port_text = read_var("MASTER_PORT");
  if (addr.empty() || port_text.empty()) {
    throw InvalidArgument(
        "torchrun variables RANK/WORLD_SIZE are set but GLOO_LITE_STORE is not, and neither are "
        "MASTER_ADDR and MASTER_PORT; set GLOO_LITE_STORE (e.g. tcp://host:port of a running "
        "gloo_lite_store, or file:///shared/dir)");
  }
  int port = 0;
  if (!parse_int(port_text, &port) || port <= 0 || port >= 65535) {
    throw InvalidArgument("MASTER_PORT='" + port_text +
                          "' is not a port in 1..65534 (gloo_lite uses MASTER_PORT + 1); fix it "
                          "or set GLOO_LITE_STORE");
  }
  info->store_port = port + 1;
  info->host_store = info->rank == 0;
  bool ipv6 = addr.find(':') != std::string::npos && addr.front() != '[';
  return "tcp://" + (ipv6 ? "[" + addr + "]" : addr) + ":" + std::to_string(port + 1);
}

// Keeps the store server that rank 0 hosts under the torchrun convention alive as long as the
// store handed to the context.
class HostedStore : public Store {
 public:
  HostedStore(std::unique_ptr<TcpStoreServer> server, std::shared_ptr<Store> client)
      : server_(std::move(server)), client_(std::move(client)) {}
  void set(const std::string& key, const Bytes& value, const Deadline& deadline) override {
    client_->set(key, value, deadline);
  }
  Bytes get(const std::string& key, const Deadline& deadline) override {
    return client_->get(key, deadline);
  }
  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override {
    client_->wait(keys, deadline);
  }
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) override {
    return client_->add(key, delta, deadline);
  }
  bool check(const std::vector<std::string>& keys, const Deadline& deadline) override {
    return client_->check(keys, deadline);
  }
  bool erase(const std::string& key, const Deadline& deadline) override {
    return client_->erase(key, deadline);
  }
  std::string describe() const override { return client_->describe() + " (hosted by rank 0)"; }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                               const Deadline& deadline) override {
    return client_->multi_get(keys, deadline);
  }

 private:
  std::unique_ptr<TcpStoreServer> server_;
  std::shared_ptr<Store> client_;
};

// The launcher whose variables are set (the first of kFlavours with its rank or size set).
const LauncherFlavour& detect_flavour() {
  const LauncherFlavour* found = nullptr;
  for (const auto& flavour : kFlavours) {
    if (!read_var(flavour.rank).empty() || !read_var(flavour.size).empty()) {
      found = &flavour;
      break;
    }
  }
  if (found == nullptr) {
    throw InvalidArgument(
        "cannot tell this process's rank: none of GLOO_LITE_RANK/GLOO_LITE_SIZE, RANK/WORLD_SIZE "
        "(torchrun), OMPI_COMM_WORLD_RANK/SIZE (Open MPI), PMI_RANK/PMI_SIZE or "
        "SLURM_PROCID/SLURM_NTASKS is set. Start the program with gloo_lite_run -n N, or set "
        "GLOO_LITE_RANK, GLOO_LITE_SIZE and GLOO_LITE_STORE");
  }
  return *found;
}

// Rank, size and local rank from `flavour`'s variables, each checked against the others.
void read_ranks(const LauncherFlavour& flavour, LaunchInfo* info) {
  std::string rank_text = read_var(flavour.rank);
  std::string size_text = read_var(flavour.size);
  if (rank_text.empty() || size_text.empty()) {
    const char* missing = rank_text.empty() ? flavour.rank : flavour.size;
    const char* present = rank_text.empty() ? flavour.size : flavour.rank;
    throw InvalidArgument(std::string(present) + " is set but " + missing + " is not (" +
                          flavour.source + "); set both");
  }
  info->source = flavour.source;
  info->rank = parse_var(flavour, flavour.rank, rank_text);
  info->size = parse_var(flavour, flavour.size, size_text);
  if (info->size < 1) {
    throw InvalidArgument(std::string(flavour.size) + "=" + size_text + " (from " + flavour.source +
                          ") must be at least 1");
  }
  if (info->rank < 0 || info->rank >= info->size) {
    throw InvalidArgument(std::string(flavour.rank) + "=" + rank_text + " (from " + flavour.source +
                          ") must be in 0.." + std::to_string(info->size - 1) + " because " +
                          flavour.size + "=" + size_text);
  }
  std::string local_text = read_var(flavour.local_rank);
  if (!local_text.empty()) {
    info->local_rank = parse_var(flavour, flavour.local_rank, local_text);
    if (info->local_rank < 0 || info->local_rank >= info->size) {
      throw InvalidArgument(std::string(flavour.local_rank) + "=" + local_text + " (from " +
                            flavour.source + ") must be in 0.." + std::to_string(info->size - 1));
    }
  }
}

// Where the ranks meet: GLOO_LITE_STORE, else (torchrun) the store rank 0 hosts beside
// torch's (torchrun_store_url).
void read_store_url(const LauncherFlavour& flavour, LaunchInfo* info) {
  info->store_url = knob_string("GLOO_LITE_STORE");
  if (info->store_url.empty()) {
    if (&flavour == &kFlavours[1]) {
      info->store_url = torchrun_store_url(info);
    } else {
      throw InvalidArgument(
          std::string("rank and size come from ") + flavour.source +
          " but GLOO_LITE_STORE is not set; set it to where the ranks meet: file:///shared/dir, "
          "tcp://host:port (a running gloo_lite_store) or redis://host:port");
    }
  }
  // A malformed URL is reported now, naming where it came from, not at the first store call.
  try {
    parse_store_url(info->store_url);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string(info->host_store || info->store_port != 0
                                          ? "the store URL built from MASTER_ADDR/MASTER_PORT"
                                          : "GLOO_LITE_STORE") +
                          " is not usable: " + e.what());
  }
}

}  // namespace

LaunchInfo read_launch_info() {
  const LauncherFlavour& flavour = detect_flavour();
  LaunchInfo info;
  read_ranks(flavour, &info);
  read_store_url(flavour, &info);
  return info;
}

std::shared_ptr<transport::Device> create_device_from_env() {
  const std::string forced = knob_string("GLOO_LITE_TRANSPORT");
  const auto& table = transport::builtin_transports();
  std::string built;
  for (const auto& entry : table) built += (built.empty() ? "" : ", ") + std::string(entry.name);
  std::vector<transport::SubDevice> available;
  std::string skipped;
  for (const auto& entry : table) {
    if (forced != "auto" && forced != entry.name) continue;
    std::string why_not;
    std::shared_ptr<transport::Device> device = entry.create(&why_not);
    if (!device) {
      if (forced != "auto") {
        // The transport's own reason is written for this case when it names the knob.
        std::string prefix =
            why_not.find("GLOO_LITE_TRANSPORT") == std::string::npos
                ? "GLOO_LITE_TRANSPORT=" + forced + ", but " + forced + " cannot run on this host: "
                : "";
        throw InvalidArgument(prefix + why_not + " (built: " + built +
                              "; unset GLOO_LITE_TRANSPORT to let each pair choose)");
      }
      LOG_DEBUG("context", "transport " << entry.name << " skipped: " << why_not);
      skipped += std::string(skipped.empty() ? "" : ", ") + entry.name;
      continue;
    }
    available.push_back({entry.name, std::move(device), entry.progresses_alone});
  }
  if (available.empty()) {
    if (forced != "auto") {
      throw InvalidArgument(
          "GLOO_LITE_TRANSPORT='" + forced + "' is not available; available transports: " + built +
          (forced == transport::kIbverbsTransport ? " (ibverbs needs libibverbs-dev at build time)"
                                                  : ""));
    }
    throw InvalidArgument("no transport can run on this host (tried " + skipped +
                          "); GLOO_LITE_LOG=debug says why");
  }
  return transport::create_mixed_device(std::move(available), forced != "auto");
}

std::shared_ptr<Context> init_from_env(ContextOptions options) {
  LaunchInfo info = read_launch_info();
  log_set_rank(info.rank);
  validate_knobs();  // a bad knob fails here, naming itself, not later as a time-out
  if (options.timeout.count() <= 0) options.timeout = knob_ms("GLOO_LITE_TIMEOUT_MS");
  const Deadline deadline = Deadline::after(options.timeout);

  std::unique_ptr<TcpStoreServer> server;
  if (info.host_store) {
    // Bind every address: MASTER_ADDR names this host as the others see it, which may not be
    // an address we can bind by that name (e.g. a DNS alias).
    bool ipv6 =
        SocketAddress::resolve(parse_store_url(info.store_url).host, 0).family() == AF_INET6;
    SocketAddress bind =
        SocketAddress::resolve(ipv6 ? "::" : "0.0.0.0", static_cast<uint16_t>(info.store_port));
    try {
      server = std::make_unique<TcpStoreServer>(bind);
    } catch (const Error& e) {
      throw StoreError("rank 0 cannot host the gloo_lite store on port " +
                       std::to_string(info.store_port) + " (MASTER_PORT + 1 under " + info.source +
                       "): " + e.what() + "; pick another MASTER_PORT or set GLOO_LITE_STORE");
    }
  }
  std::shared_ptr<Store> store = open_store(info.store_url, deadline);
  if (server) store = std::make_shared<HostedStore>(std::move(server), std::move(store));
  std::string prefix = knob_string("GLOO_LITE_PREFIX");
  if (!prefix.empty()) store = make_prefix_store(std::move(store), prefix);

  LOG_INFO("launcher", "rank " << info.rank << " of " << info.size << " (from " << info.source
                               << "), store " << redact_store_url(info.store_url)
                               << (prefix.empty() ? "" : " prefix " + prefix));
  options.report_failures = true;  // the ranks of this context are the launcher's
  return Context::create(std::move(store), info.rank, info.size, create_device_from_env(), options);
}

}  // namespace gloo_lite
