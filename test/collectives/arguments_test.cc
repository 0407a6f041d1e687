// Invalid arguments throw InvalidArgument before any data moves: roots out of range, count
// vectors of the wrong length, null buffers with elements to hold, kCustom without a function,
// bitwise ops on float types, op values past the last ReduceOp, unknown algorithm names,
// alltoall in place, counts whose bytes (or sums) overflow, buffers that partly overlap. Ranks
// are processes (a null buffer that slips through must crash one child, not the test binary).
// When every rank makes the same invalid call, the context must still work afterwards; a call
// invalid on the root alone is made by the root alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/rank_run.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;

constexpr int kRanks = 3;
constexpr int kRoot = 1;
constexpr size_t kCount = 16;
constexpr DataType kType = DataType::kInt32;
constexpr ReduceOp kSum = ReduceOp::kSum;

// Room for any call below (kRanks blocks of kCount, twice over).
struct Buffers {
  std::vector<int32_t> a = std::vector<int32_t>(2 * kRanks * kCount);
  std::vector<int32_t> b = std::vector<int32_t>(2 * kRanks * kCount);
  int32_t* in() { return a.data(); }
  int32_t* out() { return b.data(); }
};

const std::vector<size_t> kBlocks(kRanks, kCount);
constexpr size_t kHuge = SIZE_MAX / 2 + 1;  // two of these sum past SIZE_MAX

struct InvalidCall {
  const char* name;
  bool root_only;  // invalid on rank kRoot only (the root of rooted calls): it alone calls
  void (*run)(Context& c, Buffers& b);
};

CollectiveOptions with_algorithm(const char* name) {
  CollectiveOptions options;
  options.algorithm = name;
  return options;
}

const InvalidCall kInvalidCalls[] = {
    // Roots out of range.
    {"reduce_root_negative", false,
     [](Context& c, Buffers& b) { reduce(c, b.in(), b.out(), kCount, kType, kSum, -1); }},
    {"reduce_root_too_large", false,
     [](Context& c, Buffers& b) { reduce(c, b.in(), b.out(), kCount, kType, kSum, kRanks); }},
    {"gather_root_too_large", false,
     [](Context& c, Buffers& b) { gather(c, b.in(), b.out(), kCount, kType, kRanks); }},
    {"gatherv_root_negative", false,
     [](Context& c, Buffers& b) { gatherv(c, b.in(), b.out(), kBlocks, kType, -1); }},
    {"scatter_root_too_large", false,
     [](Context& c, Buffers& b) { scatter(c, b.in(), b.out(), kCount, kType, kRanks); }},
    {"scatterv_root_negative", false,
     [](Context& c, Buffers& b) { scatterv(c, b.in(), b.out(), kBlocks, kType, -1); }},
    {"broadcast_root_too_large", false,
     [](Context& c, Buffers& b) { broadcast(c, b.in(), kCount, kType, kRanks); }},
    {"broadcast_root_negative", false,
     [](Context& c, Buffers& b) { broadcast(c, b.in(), kCount, kType, -1); }},
    // Count vectors of the wrong length.
    {"reduce_scatterv_too_many_counts", false,
     [](Context& c, Buffers& b) {
       reduce_scatterv(c, b.in(), b.out(), std::vector<size_t>(kRanks + 1, 2), kType, kSum);
     }},
    {"allgatherv_too_few_counts", false,
     [](Context& c, Buffers& b) {
       allgatherv(c, b.in(), b.out(), std::vector<size_t>(kRanks - 1, 2), kType);
     }},
    {"gatherv_no_counts", false,
     [](Context& c, Buffers& b) { gatherv(c, b.in(), b.out(), {}, kType, kRoot); }},
    {"scatterv_too_many_counts", false,
     [](Context& c, Buffers& b) {
       scatterv(c, b.in(), b.out(), std::vector<size_t>(kRanks + 1, 2), kType, kRoot);
     }},
    {"alltoallv_too_few_send_counts", false,
     [](Context& c, Buffers& b) {
       alltoallv(c, b.in(), std::vector<size_t>(kRanks - 1, 2), b.out(), kBlocks, kType);
     }},
    {"alltoallv_too_many_recv_counts", false,
     [](Context& c, Buffers& b) {
       alltoallv(c, b.in(), kBlocks, b.out(), std::vector<size_t>(kRanks + 1, 2), kType);
     }},
    {"alltoallv_self_block_differs", false,
     [](Context& c, Buffers& b) {
       std::vector<size_t> receive = kBlocks;
       receive[c.rank()] += 1;
       alltoallv(c, b.in(), kBlocks, b.out(), receive, kType);
     }},
    {"alltoall_in_place", false,
     [](Context& c, Buffers& b) { alltoall(c, b.in(), b.in(), kCount, kType); }},
    // Null buffers with elements to hold.
    {"allreduce_null_input", false,
     [](Context& c, Buffers& b) { allreduce(c, nullptr, b.out(), kCount, kType, kSum); }},
    {"allreduce_null_output", false,
     [](Context& c, Buffers& b) { allreduce(c, b.in(), nullptr, kCount, kType, kSum); }},
    {"reduce_null_input", false,
     [](Context& c, Buffers& b) { reduce(c, nullptr, b.out(), kCount, kType, kSum, kRoot); }},
    {"reduce_null_output_at_root", true,
     [](Context& c, Buffers& b) { reduce(c, b.in(), nullptr, kCount, kType, kSum, kRoot); }},
    {"reduce_scatter_null_input", false,
     [](Context& c, Buffers& b) { reduce_scatter(c, nullptr, b.out(), kCount, kType, kSum); }},
    {"reduce_scatter_null_output", false,
     [](Context& c, Buffers& b) { reduce_scatter(c, b.in(), nullptr, kCount, kType, kSum); }},
    {"reduce_scatterv_null_output", false,
     [](Context& c, Buffers& b) { reduce_scatterv(c, b.in(), nullptr, kBlocks, kType, kSum); }},
    {"allgather_null_input", false,
     [](Context& c, Buffers& b) { allgather(c, nullptr, b.out(), kCount, kType); }},
    {"allgather_null_output", false,
     [](Context& c, Buffers& b) { allgather(c, b.in(), nullptr, kCount, kType); }},
    {"allgatherv_null_input", false,
     [](Context& c, Buffers& b) { allgatherv(c, nullptr, b.out(), kBlocks, kType); }},
    {"gather_null_input", false,
     [](Context& c, Buffers& b) { gather(c, nullptr, b.out(), kCount, kType, kRoot); }},
    {"gather_null_output_at_root", true,
     [](Context& c, Buffers& b) { gather(c, b.in(), nullptr, kCount, kType, kRoot); }},
    {"gatherv_null_output_at_root", true,
     [](Context& c, Buffers& b) { gatherv(c, b.in(), nullptr, kBlocks, kType, kRoot); }},
    {"scatter_null_input_at_root", true,
     [](Context& c, Buffers& b) { scatter(c, nullptr, b.out(), kCount, kType, kRoot); }},
    {"scatter_null_output", false,
     [](Context& c, Buffers& b) { scatter(c, b.in(), nullptr, kCount, kType, kRoot); }},
    {"broadcast_null_data", false,
     [](Context& c, Buffers&) { broadcast(c, nullptr, kCount, kType, kRoot); }},
    {"alltoall_null_input", false,
     [](Context& c, Buffers& b) { alltoall(c, nullptr, b.out(), kCount, kType); }},
    {"alltoall_null_output", false,
     [](Context& c, Buffers& b) { alltoall(c, b.in(), nullptr, kCount, kType); }},
    {"alltoallv_null_input", false,
     [](Context& c, Buffers& b) { alltoallv(c, nullptr, kBlocks, b.out(), kBlocks, kType); }},
    // Sizes whose bytes overflow: refused before any memory is touched (ASan would see a
    // write past the small buffers otherwise).
    {"allgatherv_counts_sum_past_size_max", false,
     [](Context& c, Buffers& b) {
       allgatherv(c, b.in(), b.out(), {1, SIZE_MAX, 2}, kType);
     }},
    {"allreduce_2_pow_62_elements", false,
     [](Context& c, Buffers& b) {
       allreduce(c, b.in(), b.out(), size_t{1} << 62, DataType::kFloat32, kSum);
     }},
    {"allreduce_size_max_over_4_plus_2", false,
     [](Context& c, Buffers& b) {
       allreduce(c, b.in(), b.out(), SIZE_MAX / 4 + 2, DataType::kFloat32, kSum);
     }},
    {"reduce_scatter_count_times_ranks_overflows", false,
     [](Context& c, Buffers& b) { reduce_scatter(c, b.in(), b.out(), SIZE_MAX / 2, kType, kSum); }},
    {"gatherv_counts_sum_past_size_max", false,
     [](Context& c, Buffers& b) {
       gatherv(c, b.in(), b.out(), {1, kHuge, kHuge}, kType, kRoot);
     }},
    {"alltoallv_recv_counts_overflow", false,
     [](Context& c, Buffers& b) {
       alltoallv(c, b.in(), kBlocks, b.out(), {kCount, kCount, SIZE_MAX}, kType);
     }},
    {"broadcast_bytes_overflow", false,
     [](Context& c, Buffers& b) { broadcast(c, b.in(), SIZE_MAX / 2, kType, kRoot); }},
    // Buffers that overlap without being the documented in-place form.
    {"reduce_scatter_partly_overlapping", false,
     [](Context& c, Buffers& b) { reduce_scatter(c, b.in(), b.in() + 1, kCount, kType, kSum); }},
    {"allreduce_partly_overlapping", false,
     [](Context& c, Buffers& b) { allreduce(c, b.in(), b.in() + 3, kCount, kType, kSum); }},
    {"allgather_input_inside_output_off_its_block", false,
     [](Context& c, Buffers& b) { allgather(c, b.out() + 1, b.out(), kCount, kType); }},
    {"alltoall_partly_overlapping", false,
     [](Context& c, Buffers& b) { alltoall(c, b.in(), b.in() + kCount, kCount, kType); }},
    {"gather_partly_overlapping_at_root", true,
     [](Context& c, Buffers& b) { gather(c, b.out() + 1, b.out(), kCount, kType, kRoot); }},
    // input == output where the rank's own block is not at offset 0 (rank 1): not in place
    // (rank 1's data would be taken for block 1 and lost) but an overlap.
    {"allgather_same_pointer_on_rank_1", true,
     [](Context& c, Buffers& b) { allgather(c, b.out(), b.out(), kCount, kType); }},
    {"iallgather_same_pointer_on_rank_1", true,
     [](Context& c, Buffers& b) { iallgather(c, b.out(), b.out(), kCount, kType).wait(); }},
    {"allgatherv_same_pointer_on_rank_1", true,
     [](Context& c, Buffers& b) { allgatherv(c, b.out(), b.out(), kBlocks, kType); }},
    {"gather_same_pointer_at_root_1", true,
     [](Context& c, Buffers& b) { gather(c, b.out(), b.out(), kCount, kType, kRoot); }},
    {"gatherv_same_pointer_at_root_1", true,
     [](Context& c, Buffers& b) { gatherv(c, b.out(), b.out(), kBlocks, kType, kRoot); }},
    {"scatter_same_pointer_at_root_1", true,
     [](Context& c, Buffers& b) { scatter(c, b.in(), b.in(), kCount, kType, kRoot); }},
    {"scatterv_same_pointer_at_root_1", true,
     [](Context& c, Buffers& b) { scatterv(c, b.in(), b.in(), kBlocks, kType, kRoot); }},
    {"scatter_output_at_another_block_at_root", true,
     [](Context& c, Buffers& b) { scatter(c, b.in(), b.in() + 2 * kCount, kCount, kType, kRoot); }},
    // kCustom without a function.
    {"allreduce_custom_without_function", false,
     [](Context& c, Buffers& b) {
       allreduce(c, b.in(), b.out(), kCount, kType, ReduceOp::kCustom);
     }},
    {"reduce_custom_without_function", false,
     [](Context& c, Buffers& b) {
       reduce(c, b.in(), b.out(), kCount, kType, ReduceOp::kCustom, kRoot);
     }},
    {"reduce_scatter_custom_without_function", false,
     [](Context& c, Buffers& b) {
       reduce_scatter(c, b.in(), b.out(), kCount, kType, ReduceOp::kCustom);
     }},
    {"reduce_scatterv_custom_without_function", false,
     [](Context& c, Buffers& b) {
       reduce_scatterv(c, b.in(), b.out(), kBlocks, kType, ReduceOp::kCustom);
     }},
    // Bitwise ops on float types (the buffers are large enough for any of these types).
    {"allreduce_band_float32", false,
     [](Context& c, Buffers& b) {
       allreduce(c, b.in(), b.out(), kCount, DataType::kFloat32, ReduceOp::kBand);
     }},
    {"reduce_bor_float16", false,
     [](Context& c, Buffers& b) {
       reduce(c, b.in(), b.out(), kCount, DataType::kFloat16, ReduceOp::kBor, kRoot);
     }},
    {"reduce_scatter_bxor_bfloat16", false,
     [](Context& c, Buffers& b) {
       reduce_scatter(c, b.in(), b.out(), kCount / 2, DataType::kBFloat16, ReduceOp::kBxor);
     }},
    {"reduce_scatterv_band_float64", false,
     [](Context& c, Buffers& b) {
       reduce_scatterv(c, b.in(), b.out(), {2, 2, 2}, DataType::kFloat64, ReduceOp::kBand);
     }},
    {"iallreduce_bxor_float64", false,
     [](Context& c, Buffers& b) {
       iallreduce(c, b.in(), b.out(), kCount / 2, DataType::kFloat64, ReduceOp::kBxor).wait();
     }},
    // An op value past the last ReduceOp.
    {"allreduce_op_out_of_range", false,
     [](Context& c, Buffers& b) {
       allreduce(c, b.in(), b.out(), kCount, kType, static_cast<ReduceOp>(9));
     }},
    // Algorithm names nobody registered.
    {"allreduce_unknown_algorithm", false,
     [](Context& c, Buffers& b) {
       allreduce(c, b.in(), b.out(), kCount, kType, kSum, with_algorithm("no_such_algorithm"));
     }},
    {"broadcast_unknown_algorithm", false,
     [](Context& c, Buffers& b) {
       broadcast(c, b.in(), kCount, kType, kRoot, with_algorithm("no_such_algorithm"));
     }},
};

void PrintTo(const InvalidCall& call, std::ostream* os) { *os << call.name; }

class CollectiveArguments : public ::testing::TestWithParam<InvalidCall> {};

TEST_P(CollectiveArguments, ThrowsInvalidArgument) {
  const InvalidCall& call = GetParam();
  ContextOptions options;
  options.timeout = 10s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        std::string rank = "rank " + std::to_string(context.rank()) + ": ";
        if (!call.root_only || context.rank() == kRoot) {
          Buffers buffers;
          try {
            call.run(context, buffers);
            ADD_FAILURE() << rank << call.name << " returned; expected InvalidArgument";
          } catch (const InvalidArgument&) {
          } catch (const std::exception& error) {
            ADD_FAILURE() << rank << call.name << " threw " << describe_exception(error)
                          << "; expected InvalidArgument";
          }
        }
        if (!call.root_only && !::testing::Test::HasFailure()) {
          // Every rank made the same invalid call: the context must still work.
          std::vector<int32_t> data(5, context.rank() + 1);
          allreduce(context, data);
          EXPECT_EQ(data, std::vector<int32_t>(5, kRanks * (kRanks + 1) / 2)) << rank;
        }
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

INSTANTIATE_TEST_SUITE_P(Processes, CollectiveArguments, ::testing::ValuesIn(kInvalidCalls),
                         [](const ::testing::TestParamInfo<InvalidCall>& info) {
                           return std::string(info.param.name);
                         });

// The refusal of a bitwise op on a float type says what was wrong and what to do: the
// collective, the rank, the op, the type, and that an integer type is needed. Checked on one
// rank: the check runs before any message.
TEST(BitwiseArguments, OnFloatNamesCollectiveOpAndType) {
  ContextOptions options;
  options.timeout = 10s;
  auto results = run_context_processes(
      1,
      [&](Context& context) {
        double data[4] = {1, 2, 3, 4};
        const DataType types[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64};
        for (DataType type : types) {
          for (ReduceOp op : {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
            try {
              reduce(context, data, data, 2, type, op, 0);
              ADD_FAILURE() << "reduce accepted " << op_name(op) << " on " << type_name(type);
            } catch (const InvalidArgument& error) {
              const std::string what = error.what();
              for (const std::string& part :
                   {std::string("reduce on rank 0"), std::string("op ") + op_name(op),
                    std::string(type_name(type)), std::string("need an integer type")}) {
                EXPECT_NE(what.find(part), std::string::npos) << "no '" << part << "' in " << what;
              }
            }
          }
        }
        // An integer type takes them (P = 1: the result is the input).
        int64_t value = 6;
        allreduce(context, &value, &value, 1, DataType::kInt64, ReduceOp::kBxor);
        EXPECT_EQ(value, 6);
      },
      60s, options);
  expect_all_ok(results);
}

// An overlap that is not the in-place form says so: the collective, the rank, and the form to
// pass (for rank 1's allgather, the input at the output + 1 block). Rank 1 makes the refused
// calls alone; then both ranks use the in-place forms, which give the reference (rank 0's own
// block is at offset 0: there input == output is in place).
TEST(OverlapArguments, NamesTheRankAndTheInPlaceForm) {
  ContextOptions options;
  options.timeout = 10s;
  auto results = run_context_processes(
      2,
      [&](Context& context) {
        const int rank = context.rank();
        std::vector<int32_t> data(2 * kCount, -1);
        if (rank == 1) {
          auto expect_refused = [&](const char* what, auto call, std::vector<std::string> parts) {
            try {
              call();
              ADD_FAILURE() << what << " returned; expected InvalidArgument";
            } catch (const InvalidArgument& error) {
              const std::string message = error.what();
              for (const std::string& part : parts) {
                EXPECT_NE(message.find(part), std::string::npos)
                    << what << ": no '" << part << "' in " << message;
              }
            }
          };
          const std::string block = "output+" + std::to_string(kCount * sizeof(int32_t));
          expect_refused("allgather",
                         [&] { allgather(context, data.data(), data.data(), kCount, kType); },
                         {"allgather on rank 1", "this rank's block of the output", block});
          expect_refused("gather",
                         [&] { gather(context, data.data(), data.data(), kCount, kType, 1); },
                         {"gather on rank 1", "the root's own block of the output", block});
          expect_refused("scatter",
                         [&] { scatter(context, data.data(), data.data(), kCount, kType, 1); },
                         {"scatter on rank 1", "the root's own block of the input",
                          "the output at input+" + std::to_string(kCount * sizeof(int32_t))});
          expect_refused("alltoall",
                         [&] { alltoall(context, data.data(), data.data(), kCount, kType); },
                         {"alltoall on rank 1", "no in-place form"});
        }
        // The in-place forms: each rank's input is its own block of the output.
        int32_t* own = data.data() + rank * kCount;
        std::fill(own, own + kCount, 10 + rank);
        allgather(context, own, data.data(), kCount, kType);
        std::vector<int32_t> want(2 * kCount, 10);
        std::fill(want.begin() + kCount, want.end(), 11);
        EXPECT_EQ(data, want) << "allgather in place on rank " << rank;
        for (int root : {0, 1}) {
          std::vector<int32_t> blocks(2 * kCount);
          for (size_t i = 0; i < blocks.size(); ++i)
            blocks[i] = static_cast<int32_t>(100 * root + i);
          std::vector<int32_t> mine(kCount, -1);
          int32_t* output = rank == root ? blocks.data() + root * kCount : mine.data();
          scatter(context, blocks.data(), output, kCount, kType, root);
          for (size_t i = 0; i < kCount; ++i) {
            ASSERT_EQ(output[i], static_cast<int32_t>(100 * root + rank * kCount + i))
                << "scatter in place from root " << root << " on rank " << rank;
          }
        }
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

// Null buffers are fine when there is nothing to hold: every rank makes the call, which must
// complete without an exception.
struct ZeroCall {
  const char* name;
  void (*run)(Context& c);
};

const std::vector<size_t> kNone(kRanks, 0);

const ZeroCall kZeroCalls[] = {
    {"allreduce", [](Context& c) { allreduce(c, nullptr, nullptr, 0, kType, kSum); }},
    {"reduce", [](Context& c) { reduce(c, nullptr, nullptr, 0, kType, kSum, kRoot); }},
    {"reduce_scatter", [](Context& c) { reduce_scatter(c, nullptr, nullptr, 0, kType, kSum); }},
    {"reduce_scatterv",
     [](Context& c) { reduce_scatterv(c, nullptr, nullptr, kNone, kType, kSum); }},
    {"allgather", [](Context& c) { allgather(c, nullptr, nullptr, 0, kType); }},
    {"allgatherv", [](Context& c) { allgatherv(c, nullptr, nullptr, kNone, kType); }},
    {"gather", [](Context& c) { gather(c, nullptr, nullptr, 0, kType, kRoot); }},
    {"gatherv", [](Context& c) { gatherv(c, nullptr, nullptr, kNone, kType, kRoot); }},
    {"scatter", [](Context& c) { scatter(c, nullptr, nullptr, 0, kType, kRoot); }},
    {"scatterv", [](Context& c) { scatterv(c, nullptr, nullptr, kNone, kType, kRoot); }},
    {"broadcast", [](Context& c) { broadcast(c, nullptr, 0, kType, kRoot); }},
    {"alltoall", [](Context& c) { alltoall(c, nullptr, nullptr, 0, kType); }},
    {"alltoallv", [](Context& c) { alltoallv(c, nullptr, kNone, nullptr, kNone, kType); }},
};

void PrintTo(const ZeroCall& call, std::ostream* os) { *os << call.name; }

class CollectiveZeroCount : public ::testing::TestWithParam<ZeroCall> {};

TEST_P(CollectiveZeroCount, AcceptsNullBuffers) {
  const ZeroCall& call = GetParam();
  ContextOptions options;
  options.timeout = 10s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        try {
          call.run(context);
        } catch (const std::exception& error) {
          ADD_FAILURE() << "rank " << context.rank() << ": " << call.name
                        << " with null buffers and no elements threw " << describe_exception(error);
        }
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

INSTANTIATE_TEST_SUITE_P(Processes, CollectiveZeroCount, ::testing::ValuesIn(kZeroCalls),
                         [](const ::testing::TestParamInfo<ZeroCall>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace gloo_lite::test
