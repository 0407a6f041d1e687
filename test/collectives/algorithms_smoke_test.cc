// Smoke tests of the tree, direct, bruck, pairwise and dissemination algorithms: each one chosen
// explicitly through CollectiveOptions::algorithm, ranks as threads at P = 2, 3, 4, 5, 8, roots
// other than 0, float32 sum and int32 max, counts 0, 1, 7, 1000, 100003, equal and variable
// blocks, in place and out of place. Expected results come from plain loops over every rank's
// inputs in this file. The cost functions are checked against the formulas of
// docs/algorithms.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/host.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/transport/tag_space.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

const size_t kCounts[] = {0, 1, 7, 1000, 100003};

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// float32 with sum: small integers, so every association order gives the same exact result.
// int32 with max: any value, negatives included.
template <typename T>
struct Kind;
template <>
struct Kind<float> {
  static constexpr DataType type = DataType::kFloat32;
  static constexpr ReduceOp op = ReduceOp::kSum;
  static constexpr const char* name = "float32/sum";
  static float value(uint64_t h) { return static_cast<float>(static_cast<int>(h % 41) - 20); }
  static float combine(float a, float b) { return a + b; }
  static float filler() { return -1234.5f; }
};
template <>
struct Kind<int32_t> {
  static constexpr DataType type = DataType::kInt32;
  static constexpr ReduceOp op = ReduceOp::kMax;
  static constexpr const char* name = "int32/max";
  static int32_t value(uint64_t h) { return static_cast<int32_t>(static_cast<uint32_t>(h)); }
  static int32_t combine(int32_t a, int32_t b) { return std::max(a, b); }
  static int32_t filler() { return -777777; }
};

// Element i of rank `rank`'s input in a case with `salt`.
template <typename T>
T input(int rank, size_t i, uint64_t salt) {
  return Kind<T>::value(mix(mix(salt) ^ (uint64_t(rank) << 40) ^ i));
}
template <typename T>
std::vector<T> inputs(int rank, size_t first, size_t count, uint64_t salt) {
  std::vector<T> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = input<T>(rank, first + i, salt);
  return data;
}
// Elements first..first+count-1 reduced over every rank, left to right.
template <typename T>
std::vector<T> reduced(int ranks, size_t first, size_t count, uint64_t salt) {
  std::vector<T> want = inputs<T>(0, first, count, salt);
  for (int r = 1; r < ranks; ++r) {
    for (size_t i = 0; i < count; ++i) {
      want[i] = Kind<T>::combine(want[i], input<T>(r, first + i, salt));
    }
  }
  return want;
}

template <typename T>
void expect_values(const T* got, const std::vector<T>& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " of " << want.size() << " is " << got[i]
                    << ", expected " << want[i];
      return;
    }
  }
}

// One case: an algorithm on a context with the parameters of one call.
struct Case {
  Context& context;
  std::string algorithm;
  size_t count;
  int root;
  uint64_t salt;
  std::atomic<int>* arrived;  // barrier bookkeeping shared by the rank threads

  int rank() const { return context.rank(); }
  int size() const { return context.size(); }
  CollectiveOptions options() const {
    CollectiveOptions options;
    options.algorithm = algorithm;
    return options;
  }
  template <typename T>
  std::string what(const char* collective) const {
    return algorithm + " " + collective + " " + Kind<T>::name + " P=" + std::to_string(size()) +
           " rank=" + std::to_string(rank()) + " count=" + std::to_string(count) +
           " root=" + std::to_string(root);
  }
};

// Variable blocks with empty ones (ranks 1, 4, 7), for the v-variants.
std::vector<size_t> variable_blocks(int ranks, size_t count) {
  std::vector<size_t> blocks(ranks);
  for (int r = 0; r < ranks; ++r) blocks[r] = r % 3 == 1 ? 0 : count / (r + 1) + r;
  return blocks;
}
std::vector<size_t> prefix(const std::vector<size_t>& blocks) {
  std::vector<size_t> offsets(blocks.size() + 1, 0);
  for (size_t i = 0; i < blocks.size(); ++i) offsets[i + 1] = offsets[i] + blocks[i];
  return offsets;
}

template <typename T>
void allreduce_case(const Case& c) {
  const std::vector<T> in = inputs<T>(c.rank(), 0, c.count, c.salt);
  const std::vector<T> want = reduced<T>(c.size(), 0, c.count, c.salt);
  std::vector<T> source = in;
  std::vector<T> out(c.count, Kind<T>::filler());
  allreduce(c.context, source.data(), out.data(), c.count, Kind<T>::type, Kind<T>::op, c.options());
  expect_values(out.data(), want, c.what<T>("allreduce"));
  expect_values(source.data(), in, c.what<T>("allreduce (input untouched)"));
  allreduce(c.context, source.data(), source.data(), c.count, Kind<T>::type, Kind<T>::op,
            c.options());
  expect_values(source.data(), want, c.what<T>("allreduce in place"));
}

template <typename T>
void reduce_case(const Case& c) {
  const std::vector<T> in = inputs<T>(c.rank(), 0, c.count, c.salt);
  const std::vector<T> want = reduced<T>(c.size(), 0, c.count, c.salt);
  const bool root = c.rank() == c.root;
  std::vector<T> source = in;
  std::vector<T> out(root ? c.count : 0, Kind<T>::filler());
  reduce(c.context, source.data(), root ? out.data() : nullptr, c.count, Kind<T>::type, Kind<T>::op,
         c.root, c.options());
  if (root) expect_values(out.data(), want, c.what<T>("reduce"));
  expect_values(source.data(), in, c.what<T>("reduce (input untouched)"));
  // In place at the root.
  reduce(c.context, source.data(), root ? source.data() : nullptr, c.count, Kind<T>::type,
         Kind<T>::op, c.root, c.options());
  expect_values(source.data(), root ? want : in, c.what<T>("reduce in place"));
}

template <typename T>
void reduce_scatter_case(const Case& c, const std::vector<size_t>& blocks) {
  std::vector<size_t> offsets = prefix(blocks);
  const std::vector<T> in = inputs<T>(c.rank(), 0, offsets.back(), c.salt);
  std::vector<T> out(blocks[c.rank()], Kind<T>::filler());
  reduce_scatterv(c.context, in.data(), out.data(), blocks, Kind<T>::type, Kind<T>::op,
                  c.options());
  expect_values(out.data(), reduced<T>(c.size(), offsets[c.rank()], blocks[c.rank()], c.salt),
                c.what<T>("reduce_scatterv"));
}

template <typename T>
void allgather_case(const Case& c, const std::vector<size_t>& blocks) {
  std::vector<size_t> offsets = prefix(blocks);
  const std::vector<T> mine = inputs<T>(c.rank(), 0, blocks[c.rank()], c.salt);
  std::vector<T> out(offsets.back(), Kind<T>::filler());
  allgatherv(c.context, mine.data(), out.data(), blocks, Kind<T>::type, c.options());
  for (int r = 0; r < c.size(); ++r) {
    expect_values(out.data() + offsets[r], inputs<T>(r, 0, blocks[r], c.salt),
                  c.what<T>("allgatherv") + " block " + std::to_string(r));
  }
  // In place: the own block already sits in the output.
  std::vector<T> data(offsets.back(), Kind<T>::filler());
  std::copy(mine.begin(), mine.end(), data.begin() + offsets[c.rank()]);
  allgatherv(c.context, data.data() + offsets[c.rank()], data.data(), blocks, Kind<T>::type,
             c.options());
  for (int r = 0; r < c.size(); ++r) {
    expect_values(data.data() + offsets[r], inputs<T>(r, 0, blocks[r], c.salt),
                  c.what<T>("allgatherv in place") + " block " + std::to_string(r));
  }
}

template <typename T>
void gather_case(const Case& c, const std::vector<size_t>& blocks) {
  std::vector<size_t> offsets = prefix(blocks);
  const bool root = c.rank() == c.root;
  const std::vector<T> mine = inputs<T>(c.rank(), 0, blocks[c.rank()], c.salt);
  std::vector<T> out(root ? offsets.back() : 0, Kind<T>::filler());
  gatherv(c.context, mine.data(), root ? out.data() : nullptr, blocks, Kind<T>::type, c.root,
          c.options());
  if (!root) return;
  for (int r = 0; r < c.size(); ++r) {
    expect_values(out.data() + offsets[r], inputs<T>(r, 0, blocks[r], c.salt),
                  c.what<T>("gatherv") + " block " + std::to_string(r));
  }
}

template <typename T>
void scatter_case(const Case& c, const std::vector<size_t>& blocks) {
  std::vector<size_t> offsets = prefix(blocks);
  const bool root = c.rank() == c.root;
  std::vector<T> in = root ? inputs<T>(c.root, 0, offsets.back(), c.salt) : std::vector<T>();
  std::vector<T> out(blocks[c.rank()], Kind<T>::filler());
  scatterv(c.context, root ? in.data() : nullptr, out.data(), blocks, Kind<T>::type, c.root,
           c.options());
  expect_values(out.data(), inputs<T>(c.root, offsets[c.rank()], blocks[c.rank()], c.salt),
                c.what<T>("scatterv"));
}

template <typename T>
void broadcast_case(const Case& c) {
  std::vector<T> data = c.rank() == c.root ? inputs<T>(c.root, 0, c.count, c.salt)
                                           : std::vector<T>(c.count, Kind<T>::filler());
  broadcast(c.context, data.data(), c.count, Kind<T>::type, c.root, c.options());
  expect_values(data.data(), inputs<T>(c.root, 0, c.count, c.salt), c.what<T>("broadcast"));
}

// Rank i sends send_count(i, j) elements to rank j: elements taken from i's input at
// send_offset(i, j). `variable` mixes sizes, empty blocks included.
size_t send_count(size_t count, bool variable, int i, int j) {
  if (!variable) return count;
  if ((i * 5 + j) % 4 == 1) return 0;
  return count / (1 + (i + 2 * j) % 3) + static_cast<size_t>(j);
}

template <typename T>
void alltoall_case(const Case& c, bool variable) {
  const int p = c.size();
  const int me = c.rank();
  std::vector<size_t> sends(p);
  std::vector<size_t> receives(p);
  for (int j = 0; j < p; ++j) {
    sends[j] = send_count(c.count, variable, me, j);
    receives[j] = send_count(c.count, variable, j, me);
  }
  std::vector<size_t> send_offsets = prefix(sends);
  std::vector<size_t> recv_offsets = prefix(receives);
  const std::vector<T> in = inputs<T>(me, 0, send_offsets.back(), c.salt);
  std::vector<T> out(recv_offsets.back(), Kind<T>::filler());
  alltoallv(c.context, in.data(), sends, out.data(), receives, Kind<T>::type, c.options());
  for (int i = 0; i < p; ++i) {
    // What rank i put at its send offset for us.
    size_t first = 0;
    for (int j = 0; j < me; ++j) first += send_count(c.count, variable, i, j);
    expect_values(out.data() + recv_offsets[i], inputs<T>(i, first, receives[i], c.salt),
                  c.what<T>("alltoallv") + " from " + std::to_string(i));
  }
}

// Ranks enter at different times; none may leave before all have entered.
void barrier_case(const Case& c) {
  std::atomic<int>& arrived = c.arrived[c.salt % 64];
  std::this_thread::sleep_for(std::chrono::milliseconds(((c.rank() + c.salt) % c.size()) * 3));
  arrived.fetch_add(1);
  barrier(c.context, c.options());
  EXPECT_EQ(arrived.load(), c.size())
      << c.algorithm << " barrier left early on rank " << c.rank() << " (P=" << c.size() << ")";
}

template <typename T>
void typed_case(const std::string& collective, const Case& c) {
  const std::vector<size_t> equal(c.size(), c.count);
  const std::vector<size_t> variable = variable_blocks(c.size(), c.count);
  if (collective == "allreduce") allreduce_case<T>(c);
  if (collective == "reduce") reduce_case<T>(c);
  if (collective == "broadcast") broadcast_case<T>(c);
  if (collective == "reduce_scatter") reduce_scatter_case<T>(c, equal);
  if (collective == "reduce_scatterv") reduce_scatter_case<T>(c, variable);
  if (collective == "allgather") allgather_case<T>(c, equal);
  if (collective == "allgatherv") allgather_case<T>(c, variable);
  if (collective == "gather") gather_case<T>(c, equal);
  if (collective == "gatherv") gather_case<T>(c, variable);
  if (collective == "scatter") scatter_case<T>(c, equal);
  if (collective == "scatterv") scatter_case<T>(c, variable);
  if (collective == "alltoall") alltoall_case<T>(c, false);
  if (collective == "alltoallv") alltoall_case<T>(c, true);
}

bool rooted(const std::string& collective) {
  return collective == "reduce" || collective == "broadcast" ||
         collective.rfind("gather", 0) == 0 || collective.rfind("scatter", 0) == 0;
}

ContextOptions test_options() {
  ContextOptions options;
  options.timeout = std::chrono::seconds(60);  // a hang fails in a minute, not five
  return options;
}

// "algorithm/collective" at P ranks: every count, both element kinds, roots 1 and P-1.
using Param = std::tuple<std::string, int>;
class AlgorithmSmoke : public ::testing::TestWithParam<Param> {};

TEST_P(AlgorithmSmoke, MatchesReference) {
  const auto& [name, ranks] = GetParam();
  const std::string algorithm = name.substr(0, name.find('/'));
  const std::string collective = name.substr(name.find('/') + 1);
  std::vector<int> roots = {0};
  if (rooted(collective)) roots = ranks > 2 ? std::vector<int>{1, ranks - 1} : std::vector<int>{1};
  std::atomic<int> arrived[64] = {};
  run_context_threads(
      ranks,
      [&](Context& context) {
        uint64_t salt = 0;
        for (size_t count : kCounts) {
          for (int root : roots) {
            Case c{context, algorithm, count, root, ++salt, arrived};
            if (collective == "barrier") {
              barrier_case(c);
              continue;
            }
            typed_case<float>(collective, c);
            typed_case<int32_t>(collective, c);
          }
        }
      },
      test_options());
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::get<0>(info.param);
  std::replace(name.begin(), name.end(), '/', '_');
  return name + "_P" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Families, AlgorithmSmoke,
    ::testing::Combine(::testing::Values("tree/broadcast", "tree/reduce", "tree/allreduce",
                                         "tree/gather", "tree/gatherv", "tree/scatter",
                                         "tree/scatterv", "tree/barrier", "direct/allreduce",
                                         "direct/reduce_scatter", "direct/reduce_scatterv",
                                         "direct/allgather", "direct/allgatherv", "direct/gather",
                                         "direct/gatherv", "direct/scatter", "direct/scatterv",
                                         "direct/broadcast", "direct/alltoall", "direct/alltoallv",
                                         "direct/barrier", "bruck/allgather", "bruck/allgatherv",
                                         "pairwise/alltoall", "pairwise/alltoallv",
                                         "dissemination/barrier"),
                       ::testing::Values(2, 3, 4, 5, 8)),
    param_name);

// Many chunks through the pipelined tree (12 MB: 46 chunks of 256 KiB, four in flight).
TEST(TreePipeline, ManyChunks) {
  for (int ranks : {3, 5}) {
    run_context_threads(
        ranks,
        [&](Context& context) {
          const size_t count = 3'000'001;
          Case c{context, "tree", count, ranks - 1, 99, nullptr};
          allreduce_case<float>(c);
          reduce_case<int32_t>(c);
          broadcast_case<float>(c);
        },
        test_options());
  }
}

// Direct allreduce keeps (P-1) vectors in scratch and declines beyond 8 MiB of them; asking for
// it then is an argument error on every rank, before any data moves.
TEST(DirectAllreduce, DeclinesLargeVectors) {
  run_context_threads(
      2,
      [&](Context& context) {
        std::vector<float> data((size_t{8} << 20) / sizeof(float) + 1, 1.0f);
        CollectiveOptions options;
        options.algorithm = "direct";
        EXPECT_THROW(allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                               ReduceOp::kSum, options),
                     InvalidArgument);
      },
      test_options());
}

// In-place reduce_scatterv (result at the start of the buffer, as MPI_IN_PLACE) and scatterv (the
// root's block stays in its input), run at the algorithm level with the aliased buffer
// registered over its whole extent. The blocks make rank 2's own block overlap its result.
algo::Call algorithm_call(Context& context, algo::Collective collective,
                          const std::vector<size_t>& blocks, int root) {
  algo::Call call;
  call.context = &engine_of(context);
  call.mesh = &engine_of(context).mesh();
  call.rank = context.rank();
  call.size = context.size();
  call.collective = collective;
  call.type = DataType::kInt32;
  call.element = sizeof(int32_t);
  call.op = ReduceOp::kMax;
  call.root = root;
  call.blocks = blocks;
  call.offsets = prefix(blocks);
  call.offsets.pop_back();
  const uint16_t stream = 7;           // a tag stream of its own, apart from the API calls
  thread_local uint64_t sequence = 0;  // each rank is a thread: it counts its own calls
  call.tag = tags::collective(stream, sequence++);
  call.deadline = Deadline::after(std::chrono::seconds(60));
  return call;
}

TEST(InPlace, ReduceScatterAndScatterAtAlgorithmLevel) {
  for (int ranks : {3, 4}) {
    run_context_threads(
        ranks,
        [&](Context& context) {
          std::vector<size_t> blocks = {1, 0, 5, 2};
          blocks.resize(ranks);
          std::vector<size_t> offsets = prefix(blocks);
          const int me = context.rank();
          const uint64_t salt = 4242;
          {
            std::vector<int32_t> data = inputs<int32_t>(me, 0, offsets.back(), salt);
            auto memory = engine_of(context).mesh().register_memory(data.data(), data.size() * 4);
            algo::Call call = algorithm_call(context, algo::Collective::kReduceScatter, blocks, 0);
            call.input = call.output = reinterpret_cast<uint8_t*>(data.data());
            call.input_memory = call.output_memory = memory.get();
            algo::find_algorithm(call.collective, "direct")->run(call);
            expect_values(data.data(), reduced<int32_t>(ranks, offsets[me], blocks[me], salt),
                          "direct reduce_scatterv in place, rank " + std::to_string(me));
          }
          for (const char* name : {"tree", "direct"}) {
            const int root = 2;
            std::vector<int32_t> data = me == root ? inputs<int32_t>(root, 0, offsets.back(), salt)
                                                   : std::vector<int32_t>(blocks[me], -1);
            auto memory = engine_of(context).mesh().register_memory(data.data(), data.size() * 4);
            algo::Call call = algorithm_call(context, algo::Collective::kScatter, blocks, root);
            call.output = reinterpret_cast<uint8_t*>(data.data());
            call.output_memory = memory.get();
            if (me == root) {
              call.input = call.output;
              call.input_memory = call.output_memory;
            }
            algo::find_algorithm(call.collective, name)->run(call);
            expect_values(data.data(),
                          me == root ? inputs<int32_t>(root, 0, offsets.back(), salt)
                                     : inputs<int32_t>(root, offsets[me], blocks[me], salt),
                          std::string(name) + " scatterv in place, rank " + std::to_string(me));
          }
        },
        test_options());
  }
}

// The cost functions against docs/algorithms.md: steps with (alpha, beta, gamma) = (1, 0, 0),
// bytes on the wire with (0, 1, 0), bytes reduced with (0, 0, 1).
struct Terms {
  double steps, wire, reduced;
};
Terms terms(const algo::Call& call, const char* name) {
  const algo::Algorithm* algorithm = algo::find_algorithm(call.collective, name);
  EXPECT_NE(algorithm, nullptr) << name << " " << algo::collective_name(call.collective);
  if (algorithm == nullptr) return {-1, -1, -1};
  return {algorithm->cost(call, {1, 0, 0}), algorithm->cost(call, {0, 1, 0}),
          algorithm->cost(call, {0, 0, 1})};
}
algo::Call vector_call(algo::Collective collective, int size, size_t count) {
  algo::Call call;
  call.collective = collective;
  call.size = size;
  call.type = DataType::kFloat32;
  call.element = 4;
  call.count = count;
  return call;
}
algo::Call block_call(algo::Collective collective, int size, size_t block) {
  algo::Call call = vector_call(collective, size, 0);
  call.blocks.assign(size, block);
  call.offsets = prefix(call.blocks);
  call.offsets.pop_back();
  return call;
}
void expect_terms(Terms got, Terms want, const std::string& what) {
  EXPECT_DOUBLE_EQ(got.steps, want.steps) << what << " steps";
  EXPECT_DOUBLE_EQ(got.wire, want.wire) << what << " bytes on the wire";
  EXPECT_DOUBLE_EQ(got.reduced, want.reduced) << what << " bytes reduced";
}

TEST(CostModel, MatchesDocumentedFormulas) {
  using algo::Collective;
  // Tree: h = ceil(log2 P); K chunks of s bytes (s >= 256 KiB, K <= 256).
  expect_terms(terms(vector_call(Collective::kBroadcast, 5, 10), "tree"), {3, 120, 0},
               "tree broadcast P=5 n=40");
  expect_terms(terms(vector_call(Collective::kReduce, 8, 10), "tree"), {3, 120, 120},
               "tree reduce P=8 n=40");
  const double n = 64.0 * (1 << 20);  // 16 Mi floats: K = 256 chunks of 256 KiB
  expect_terms(terms(vector_call(Collective::kAllreduce, 8, 16 << 20), "tree"),
               {2 * 3 + 255, 3 * (n + 256 * 1024), 3 * n}, "tree allreduce P=8 n=64MiB");
  expect_terms(terms(vector_call(Collective::kBroadcast, 4, 1 << 20), "tree"),
               {2 + 16 - 1, 2 * 4.0 * (1 << 20), 0}, "tree broadcast P=4 n=4MiB");
  expect_terms(terms(block_call(Collective::kGather, 4, 25), "tree"), {2, 300, 0},
               "tree gather P=4 n=400");
  expect_terms(terms(block_call(Collective::kScatter, 5, 25), "tree"), {3, 400, 0},
               "tree scatter P=5 n=500");
  // Direct: P-1 steps (single port).
  expect_terms(terms(vector_call(Collective::kAllreduce, 3, 100), "direct"), {2, 800, 800},
               "direct allreduce P=3 n=400");
  expect_terms(terms(block_call(Collective::kReduceScatter, 4, 25), "direct"), {3, 300, 300},
               "direct reduce_scatter P=4 n=400");
  expect_terms(terms(block_call(Collective::kAllgather, 4, 25), "direct"), {3, 300, 0},
               "direct allgather P=4 n=400");
  expect_terms(terms(vector_call(Collective::kBroadcast, 4, 100), "direct"), {3, 1200, 0},
               "direct broadcast P=4 n=400");
  expect_terms(terms(vector_call(Collective::kBarrier, 5, 0), "direct"), {4, 0, 0},
               "direct barrier P=5");
  // Bruck, pairwise, dissemination.
  expect_terms(terms(block_call(Collective::kAllgather, 5, 20), "bruck"), {3, 320, 0},
               "bruck allgather P=5 n=400");
  algo::Call alltoall = block_call(Collective::kAlltoall, 5, 20);
  alltoall.recv_blocks = alltoall.blocks;
  alltoall.recv_offsets = alltoall.offsets;
  expect_terms(terms(alltoall, "pairwise"), {4, 320, 0}, "pairwise alltoall P=5 n=400");
  expect_terms(terms(alltoall, "direct"), {4, 320, 0}, "direct alltoall P=5 n=400");
  for (auto [p, rounds] : std::map<int, int>{{2, 1}, {5, 3}, {8, 3}, {9, 4}}) {
    expect_terms(terms(vector_call(Collective::kBarrier, p, 0), "dissemination"),
                 {double(rounds), 0, 0}, "dissemination barrier P=" + std::to_string(p));
    expect_terms(terms(vector_call(Collective::kBarrier, p, 0), "tree"), {2.0 * rounds, 0, 0},
                 "tree barrier P=" + std::to_string(p));
  }
}

// Messages a rank sends on average, as docs/algorithms.md counts them for the host term.
double messages(const algo::Call& call, const char* name) {
  const algo::Algorithm* algorithm = algo::find_algorithm(call.collective, name);
  EXPECT_NE(algorithm, nullptr) << name << " " << algo::collective_name(call.collective);
  return algorithm == nullptr ? -1 : algorithm->messages(call);
}

TEST(CostModel, CountsMessagesAsDocumented) {
  using algo::Collective;
  algo::Call small = vector_call(Collective::kAllreduce, 8, 2);
  EXPECT_DOUBLE_EQ(messages(small, "recursive_doubling"), 3);
  EXPECT_DOUBLE_EQ(messages(small, "halving_doubling"), 6);
  EXPECT_DOUBLE_EQ(messages(small, "tree"), 2 * 7.0 / 8);
  EXPECT_DOUBLE_EQ(messages(small, "ring"), 14);
  EXPECT_DOUBLE_EQ(messages(small, "direct"), 7);
  // P = 6 folds 2 extra ranks into a core of 4: 4 ranks x 2 steps + 2 x 2 fold messages.
  EXPECT_DOUBLE_EQ(messages(vector_call(Collective::kAllreduce, 6, 2), "recursive_doubling"),
                   (4 * 2 + 2 * 2) / 6.0);
  // Ring allreduce of 64 MiB at P = 4: 16 MiB blocks in 8 chunks, 6 steps.
  EXPECT_DOUBLE_EQ(messages(vector_call(Collective::kAllreduce, 4, 16 << 20), "ring"), 6 * 8);
  // Tree broadcast of 4 MiB: 16 chunks of 256 KiB, each received once by every non-root rank.
  EXPECT_DOUBLE_EQ(messages(vector_call(Collective::kBroadcast, 4, 1 << 20), "tree"), 3.0 / 4 * 16);
  EXPECT_DOUBLE_EQ(messages(vector_call(Collective::kBarrier, 8, 0), "dissemination"), 3);
  EXPECT_DOUBLE_EQ(messages(vector_call(Collective::kBarrier, 8, 0), "tree"), 2 * 7.0 / 8);
  EXPECT_DOUBLE_EQ(messages(block_call(Collective::kAllgather, 8, 10), "bruck"), 3);
}

// The host term decides between algorithms of equal wire cost: with ranks crowding the cores,
// the tree (2(P-1) messages in all) beats recursive doubling (P log2 P) for small vectors and
// barriers; with a core per rank the shorter critical path wins again.
TEST(CostModel, CrowdedHostsPreferFewerMessages) {
  using algo::Collective;
  const algo::CostModel model{30e-6, 1 / 1.5e9, 1 / 20e9, 35e-6};
  auto cheapest = [&](algo::Call call, double ranks_per_core) {
    call.ranks_per_core = ranks_per_core;
    const algo::Algorithm* best = nullptr;
    for (const algo::Algorithm& algorithm : algo::all_algorithms()) {
      if (algorithm.collective != call.collective || !algorithm.supports(call)) continue;
      // The message algorithms only: shm needs every rank on one host, which a call without
      // a context cannot say.
      if (std::string(algorithm.name) == "shm") continue;
      if (best == nullptr ||
          algo::estimate(algorithm, call, model) < algo::estimate(*best, call, model)) {
        best = &algorithm;
      }
    }
    return std::string(best ? best->name : "none");
  };
  EXPECT_EQ(cheapest(vector_call(Collective::kAllreduce, 8, 2), 4), "tree");
  EXPECT_EQ(cheapest(vector_call(Collective::kAllreduce, 8, 2), 1), "recursive_doubling");
  EXPECT_EQ(cheapest(vector_call(Collective::kAllreduce, 4, 2), 2), "tree");
  EXPECT_EQ(cheapest(vector_call(Collective::kBarrier, 8, 0), 4), "tree");
  EXPECT_EQ(cheapest(vector_call(Collective::kBarrier, 8, 0), 1), "dissemination");
  // P = 2: direct and dissemination are the same single exchange; the earlier entry wins.
  EXPECT_EQ(cheapest(vector_call(Collective::kBarrier, 2, 0), 1), "direct");
  // Large vectors stay with the bandwidth-optimal algorithm however crowded the host.
  EXPECT_EQ(cheapest(vector_call(Collective::kAllreduce, 8, 4 << 20), 4), "halving_doubling");
}

// CPU masks of ranks bound to different cores add up; shared cores count once.
TEST(HostMask, MergesAndCounts) {
  EXPECT_EQ(merge_cpu_masks("3", "c"), "f");
  EXPECT_EQ(merge_cpu_masks("1", "100"), "101");
  EXPECT_EQ(merge_cpu_masks("0", "0"), "0");
  EXPECT_EQ(count_cpus("f"), 4);
  EXPECT_EQ(count_cpus("101"), 2);
  EXPECT_EQ(count_cpus(merge_cpu_masks("ff", "f0f")), 12);
  EXPECT_GE(count_cpus(usable_cpu_mask()), 1);
  setenv("GLOO_LITE_CORES", "6", 1);
  EXPECT_EQ(usable_cpu_mask(), "3f");
  unsetenv("GLOO_LITE_CORES");
  EXPECT_EQ(host_identity().find(' '), std::string::npos);
}

// Every rank derives the same load from the published records: P threads of this process share
// one host, and GLOO_LITE_CORES=2 stands in for its CPU mask.
TEST(CostModel, ContextKnowsItsHostLoad) {
  setenv("GLOO_LITE_CORES", "2", 1);
  std::vector<double> seen(3, -1);
  run_context_threads(
      3, [&](Context& context) { seen[context.rank()] = engine_of(context).ranks_per_core(); },
      test_options());
  unsetenv("GLOO_LITE_CORES");
  for (double load : seen) EXPECT_DOUBLE_EQ(load, 1.5);
}

TEST(Supports, DirectScratchLimit) {
  using algo::Collective;
  const algo::Algorithm* direct = algo::find_algorithm(Collective::kAllreduce, "direct");
  ASSERT_NE(direct, nullptr);
  EXPECT_TRUE(direct->supports(vector_call(Collective::kAllreduce, 3, 1 << 20)));  // 2 x 4 MiB
  EXPECT_FALSE(direct->supports(vector_call(Collective::kAllreduce, 3, (1 << 20) + 1)));
  const algo::Algorithm* scatter = algo::find_algorithm(Collective::kReduceScatter, "direct");
  ASSERT_NE(scatter, nullptr);
  EXPECT_TRUE(scatter->supports(block_call(Collective::kReduceScatter, 5, 1 << 19)));
  EXPECT_FALSE(scatter->supports(block_call(Collective::kReduceScatter, 5, (1 << 19) + 1)));
}

}  // namespace
}  // namespace gloo_lite::test
