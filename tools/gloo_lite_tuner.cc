// Prints what `auto` picks, per collective, rank count and message size, under the cost model
// of this environment (GLOO_LITE_ALPHA_US, GLOO_LITE_BETA_GBPS, GLOO_LITE_GAMMA_GBPS,
// GLOO_LITE_OVERHEAD_US, GLOO_LITE_CORES, GLOO_LITE_ALGO), for P ranks all on this host:
//   gloo_lite_tuner [P ...]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/host.h"

using namespace gloo_lite;

namespace {

std::string format_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && bytes % 1024 == 0 && unit < 3) bytes /= 1024, ++unit;
  return std::to_string(bytes) + " " + units[unit];
}

// The auto choice for a float32 call of `bytes` total on P ranks.
std::string choice(Collective collective, int p, size_t bytes, int cores) {
  algo::Call call;
  call.rank = 0;
  call.size = p;
  call.ranks_per_core = double(p) / cores;
  call.collective = collective;
  call.type = DataType::kFloat32;
  call.element = 4;
  size_t count = bytes / 4;
  const CollectiveInfo& info = collective_info(collective);
  if (info.per_rank_blocks || info.per_pair_blocks) {
    call.blocks.assign(p, count / p);
    call.offsets.resize(p);
    for (int r = 0; r < p; ++r) call.offsets[r] = r * (count / p);
    if (info.per_pair_blocks) {
      call.recv_blocks = call.blocks;
      call.recv_offsets = call.offsets;
    }
  } else {
    call.count = count;
  }
  return algo::choose_algorithm(call, "auto").name;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {2, 4, 8, 16};
  const algo::CostModel& model = algo::CostModel::get();
  const int cores = std::max(1, count_cpus(usable_cpu_mask()));
  std::printf(
      "# auto's choices (float32), alpha %.1f us, beta %.2f GB/s, gamma %.2f GB/s, overhead "
      "%.1f us per message, all P ranks on this host's %d cores\n",
      model.alpha * 1e6, 1e-9 / model.beta, 1e-9 / model.gamma, model.overhead * 1e6, cores);
  for (const CollectiveInfo& info : kCollectives) {
    Collective collective = info.collective;
    for (int p : sizes) {
      std::string line;
      std::string last;
      size_t last_bytes = 0;
      for (size_t bytes = 8; bytes <= (size_t{256} << 20); bytes *= 2) {
        std::string name = choice(collective, p, bytes, cores);
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
