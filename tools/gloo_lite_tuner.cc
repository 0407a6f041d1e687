// Prints what `auto` picks under the library's own registry and cost model (no second model).
//
//   gloo_lite_tuner [P ...]
//     P ranks all on this host: the choice per collective, P and size, under this environment's
//     knobs (GLOO_LITE_ALPHA_US, GLOO_LITE_BETA_GBPS, GLOO_LITE_GAMMA_GBPS,
//     GLOO_LITE_OVERHEAD_US, GLOO_LITE_CORES, GLOO_LITE_ALGO).
//   gloo_lite_tuner --hosts H --ranks-per-host R [--network-gbps G] [--network-alpha-us A]
//                   [--shm-gbps S] [--shm-alpha-us A] [--cores-per-host C]
//                   [--collective NAME] [--sizes 8,1K,64M,1G] [--every]
//   gloo_lite_tuner --hosts 2,2,1 ...
//     A described cluster: H hosts of R ranks each, or the list of ranks per host (ranks
//     consecutive per host), G Gb/s over each host's link (GLOO_LITE_NET_BETA_GBPS; without it
//     the cross-host figures are those of a job that has not measured its network: alpha and
//     beta). Per collective and size: auto's algorithm, its predicted time and the runner-up;
//     --every adds every supported algorithm's estimate ("# estimate allgather 1048576 ring
//     0.0336" lines).
//     The options set the cost model's knobs for this process, so the estimates are those a
//     job with these knobs on such a cluster would compute.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "gloo_lite/algorithm_choice.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/host.h"

using namespace gloo_lite;

namespace {

std::string format_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && bytes % 1024 == 0 && unit < 3) bytes /= 1024, ++unit;
  return std::to_string(bytes) + " " + units[unit];
}

std::string format_seconds(double seconds) {
  char text[32];
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof(text), "%.1f us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof(text), "%.3f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%.3f s", seconds);
  }
  return text;
}

// A float32 call of `bytes` in all on P ranks: each rank's block of it where the collective
// takes blocks.
DescribedCall describe_call(Collective collective, int p, size_t bytes, double load) {
  DescribedCall call;
  call.collective = collective;
  call.ranks = p;
  call.ranks_per_core = load;
  const size_t count = bytes / 4;
  const CollectiveInfo& info = collective_info(collective);
  call.count = info.per_rank_blocks || info.per_pair_blocks ? count / p : count;
  return call;
}

int local_usage(const std::vector<std::string>& args) {
  std::vector<int> sizes;
  for (const std::string& arg : args) {
    char* end = nullptr;
    long p = std::strtol(arg.c_str(), &end, 10);
    if (*end != '\0' || p < 1 || p > (1 << 20)) {
      throw std::invalid_argument("'" + arg + "' is not a rank count (1 to 1048576)");
    }
    sizes.push_back(static_cast<int>(p));
  }
  if (sizes.empty()) sizes = {2, 4, 8, 16};
  const CostFigures model = cost_figures();
  const int cores = std::max(1, count_cpus(usable_cpu_mask()));
  std::printf(
      "# auto's choices (float32), alpha %.1f us, beta %.2f GB/s, gamma %.2f GB/s, overhead "
      "%.1f us per message, all P ranks on this host's %d cores\n",
      model.alpha * 1e6, 1e-9 / model.beta, 1e-9 / model.gamma, model.overhead * 1e6, cores);
  for (const CollectiveInfo& info : kCollectives) {
    for (int p : sizes) {
      std::string line;
      std::string last;
      size_t last_bytes = 0;
      for (size_t bytes = 8; bytes <= (size_t{256} << 20); bytes *= 2) {
        std::string name =
            described_choice(describe_call(info.collective, p, bytes, ranks_per_core(p, cores)));
        if (name != last) {
          if (!last.empty()) line += last + " <= " + format_bytes(last_bytes) + " < ";
          last = name;
        }
        last_bytes = bytes;
      }
      line += last;
      std::printf("%-15s P=%-3d %s\n", info.name, p, line.c_str());
    }
  }
  return 0;
}

// "64M", "1K", "8": bytes (binary suffixes K, M, G, optional "iB"/"B").
size_t parse_size(const std::string& text) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  std::string suffix(end);
  size_t scale = 1;
  if (!suffix.empty()) {
    char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    std::string rest = suffix.substr(1);
    scale = unit == 'K' ? 1u << 10 : unit == 'M' ? 1u << 20 : unit == 'G' ? 1u << 30 : 0;
    if (unit == 'B' && rest.empty()) scale = 1;
    if (scale == 0 || !(rest.empty() || rest == "B" || rest == "iB")) scale = 0;
  }
  if (end == text.c_str() || scale == 0 || value == 0 || value > (1ull << 40) / scale) {
    throw std::invalid_argument("--sizes: '" + text +
                                "' is not a size (a positive count of bytes, optionally with K, "
                                "M or G, up to 1T)");
  }
  return static_cast<size_t>(value * scale);
}

double parse_number(const std::string& option, const std::string& text, double low, double high) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(value >= low && value <= high)) {
    throw std::invalid_argument(option + ": '" + text + "' is not a number in [" +
                                std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return value;
}

// Sets a cost-model knob for this process; the registry reads it as it would in a job.
void set_knob(const char* name, double value) {
  setenv(name, std::to_string(value).c_str(), 1);
  knob_double(name);  // validates it as a job would
}

int cluster_usage(const std::vector<std::string>& args) {
  std::map<std::string, std::string> options;
  const std::vector<std::string> known = {
      "--hosts",    "--ranks-per-host", "--network-gbps",   "--network-alpha-us",
      "--shm-gbps", "--shm-alpha-us",   "--cores-per-host", "--collective",
      "--sizes"};
  bool every = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--every") {
      every = true;
      continue;
    }
    if (std::find(known.begin(), known.end(), args[i]) == known.end()) {
      throw std::invalid_argument("unknown option '" + args[i] + "'");
    }
    if (i + 1 == args.size()) throw std::invalid_argument(args[i] + " needs a value");
    options[args[i]] = args[i + 1];
    ++i;
  }
  // Ranks per host: "--hosts H --ranks-per-host R", or "--hosts 2,2,1" (a list).
  std::vector<int> layout;
  if (!options.count("--hosts")) throw std::invalid_argument("a described cluster needs --hosts");
  const std::string& hosts_text = options["--hosts"];
  if (hosts_text.find(',') != std::string::npos) {
    if (options.count("--ranks-per-host")) {
      throw std::invalid_argument("--hosts as a list (2,2,1) already gives --ranks-per-host");
    }
    for (size_t start = 0; start <= hosts_text.size();) {
      size_t comma = std::min(hosts_text.find(',', start), hosts_text.size());
      std::string item = hosts_text.substr(start, comma - start);
      double ranks = parse_number("--hosts", item, 1, 1 << 12);
      if (ranks != static_cast<int>(ranks)) {
        throw std::invalid_argument("--hosts: '" + item + "' is not a whole number of ranks");
      }
      layout.push_back(static_cast<int>(ranks));
      start = comma + 1;
    }
  } else {
    if (!options.count("--ranks-per-host")) {
      throw std::invalid_argument(
          "a described cluster needs --hosts and --ranks-per-host (or --hosts as a list, 2,2,1)");
    }
    const double hosts = parse_number("--hosts", hosts_text, 1, 1 << 16);
    const double per = parse_number("--ranks-per-host", options["--ranks-per-host"], 1, 4096);
    if (hosts != static_cast<int>(hosts) || per != static_cast<int>(per)) {
      throw std::invalid_argument("--hosts and --ranks-per-host take whole numbers");
    }
    layout.assign(static_cast<int>(hosts), static_cast<int>(per));
  }
  const int hosts = static_cast<int>(layout.size());
  const int per_host = *std::max_element(layout.begin(), layout.end());
  int p = 0;
  for (int ranks : layout) p += ranks;
  if (p < 2) throw std::invalid_argument("a cluster of one rank has nothing to tune");
  const double cores = options.count("--cores-per-host")
                           ? parse_number("--cores-per-host", options["--cores-per-host"], 1, 1e6)
                           : per_host;
  // Gb/s (network convention) to the knob's GB/s.
  if (options.count("--network-gbps")) {
    set_knob("GLOO_LITE_NET_BETA_GBPS",
             parse_number("--network-gbps", options["--network-gbps"], 1e-3, 1e5) / 8);
  }
  if (options.count("--network-alpha-us")) {
    set_knob("GLOO_LITE_NET_ALPHA_US",
             parse_number("--network-alpha-us", options["--network-alpha-us"], 0, 1e6));
  }
  if (options.count("--shm-gbps")) {
    set_knob("GLOO_LITE_SHM_BETA_GBPS",
             parse_number("--shm-gbps", options["--shm-gbps"], 1e-3, 1e5) / 8);
  }
  if (options.count("--shm-alpha-us")) {
    set_knob("GLOO_LITE_SHM_ALPHA_US",
             parse_number("--shm-alpha-us", options["--shm-alpha-us"], 0, 1e6));
  }
  std::vector<const CollectiveInfo*> collectives;
  const std::string wanted = options.count("--collective") ? options["--collective"] : "all";
  for (const CollectiveInfo& info : kCollectives) {
    if (wanted == "all" || wanted == info.name) collectives.push_back(&info);
  }
  if (collectives.empty()) {
    std::string names = "all";
    for (const CollectiveInfo& info : kCollectives) names += std::string(", ") + info.name;
    throw std::invalid_argument("--collective: no collective named '" + wanted + "' (" + names +
                                ")");
  }
  std::vector<size_t> sizes;
  std::string list =
      options.count("--sizes") ? options["--sizes"] : "8,1K,64K,256K,1M,16M,64M,256M,1G";
  for (size_t start = 0; start <= list.size();) {
    size_t comma = std::min(list.find(',', start), list.size());
    sizes.push_back(parse_size(list.substr(start, comma - start)));
    start = comma + 1;
  }

  std::vector<std::string> host_of;
  std::string shape;
  for (int h = 0; h < hosts; ++h) {
    host_of.insert(host_of.end(), layout[h], "host" + std::to_string(h));
    shape += (h ? "," : "") + std::to_string(layout[h]);
  }
  const CostFigures model = cost_figures();
  std::printf(
      "# %d hosts (ranks %s, P = %d), %.3g cores per host; network alpha %.1f us, %.3g Gb/s per "
      "host link; alpha %.1f us, %.3g Gb/s within a host; shm alpha %.1f us, %.3g Gb/s; gamma "
      "%.2f GB/s, overhead %.1f us per message; float32\n",
      hosts, shape.c_str(), p, cores, model.network_alpha * 1e6, 8e-9 / model.network_beta,
      model.alpha * 1e6, 8e-9 / model.beta, model.shm_alpha * 1e6, 8e-9 / model.shm_beta,
      1e-9 / model.gamma, model.overhead * 1e6);
  std::printf("%-15s %10s  %-20s %12s  %-20s %12s\n", "# collective", "bytes", "auto", "time",
              "runner-up", "time");
  for (const CollectiveInfo* info : collectives) {
    for (size_t bytes : sizes) {
      DescribedCall call =
          describe_call(info->collective, p, bytes, ranks_per_core(per_host, cores));
      call.hosts = host_of;
      std::vector<AlgorithmEstimate> ranked = described_estimates(call);
      if (ranked.empty()) continue;
      std::string second = ranked.size() > 1 ? ranked[1].algorithm : "-";
      std::string second_time = ranked.size() > 1 ? format_seconds(ranked[1].seconds) : "-";
      std::printf("%-15s %10s  %-20s %12s  %-20s %12s\n", info->name, format_bytes(bytes).c_str(),
                  ranked[0].algorithm.c_str(), format_seconds(ranked[0].seconds).c_str(),
                  second.c_str(), second_time.c_str());
      // --every: each supported algorithm's estimate, in seconds, for tests and comparisons
      // with measurements ('#' lines, which a reader of the table skips).
      for (size_t i = 0; every && i < ranked.size(); ++i) {
        std::printf("# estimate %s %zu %s %.9g\n", info->name, bytes, ranked[i].algorithm.c_str(),
                    ranked[i].seconds);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    bool described = !args.empty() && args[0].rfind("--", 0) == 0;
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::printf(
          "usage: gloo_lite_tuner [P ...]\n"
          "       gloo_lite_tuner --hosts H --ranks-per-host R | --hosts 2,2,1 [--network-gbps G]\n"
          "                       [--network-alpha-us A] [--shm-gbps S] [--shm-alpha-us A]\n"
          "                       [--cores-per-host C] [--collective NAME] [--sizes 8,1K,1G]\n"
          "                       [--every]\n");
      return 0;
    }
    return described ? cluster_usage(args) : local_usage(args);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gloo_lite_tuner: %s (see --help)\n", error.what());
    return 2;
  }
}
