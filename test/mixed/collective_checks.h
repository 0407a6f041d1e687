// Collectives of a mixed-transport context checked against a local reference, shared by the
// mixed mesh tests (a stand-in device beside TCP) and the mixed shm tests (shared memory beside
// TCP): every rank computes what each output must hold from the ranks' known inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"

namespace gloo_lite::test {

// Element i of rank `rank`'s input.
inline int64_t reference_value(int rank, size_t i) {
  return int64_t(rank + 1) * 1000003 + int64_t(i) * 7;
}

// Allreduce (sum) with every algorithm that runs on any P, of 1, 1000 and 300000 int64: eager
// and large messages on every transport of the context.
inline void expect_allreduce_matches(Context& context) {
  for (const char* algorithm : {"auto", "ring", "halving_doubling", "recursive_doubling", "tree"}) {
    CollectiveOptions options;
    options.algorithm = algorithm;
    for (size_t count : {size_t{1}, size_t{1000}, size_t{300000}}) {
      std::vector<int64_t> data(count), expect(count, 0);
      for (size_t i = 0; i < count; ++i) data[i] = reference_value(context.rank(), i);
      for (int r = 0; r < context.size(); ++r) {
        for (size_t i = 0; i < count; ++i) expect[i] += reference_value(r, i);
      }
      allreduce(context, data.data(), data.data(), count, DataType::kInt64, ReduceOp::kSum,
                options);
      ASSERT_EQ(data, expect) << algorithm << ", " << count << " elements";
    }
  }
}

// Allgather of `elements` int32 per rank: block r holds rank r's values.
inline void expect_allgather_matches(Context& context, size_t elements) {
  const int me = context.rank();
  const int ranks = context.size();
  std::vector<int32_t> block(elements), gathered(elements * ranks);
  for (size_t i = 0; i < elements; ++i) block[i] = me * 1000000 + int32_t(i);
  allgather(context, block.data(), gathered.data(), elements, DataType::kInt32);
  for (int r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < elements; ++i) {
      ASSERT_EQ(gathered[r * elements + i], r * 1000000 + int32_t(i)) << "block " << r;
    }
  }
}

// Broadcast of 70000 floats from `root`: the other ranks start from another value.
inline void expect_broadcast_matches(Context& context, int root) {
  std::vector<float> broadcasted(70000, context.rank() == root ? 2.5f + root : -1.0f);
  broadcast(context, broadcasted.data(), broadcasted.size(), DataType::kFloat32, root);
  EXPECT_EQ(broadcasted, std::vector<float>(70000, 2.5f + root)) << "root " << root;
}

// Alltoall of 3 int32 per pair: what rank i sent to this rank, tagged with both ranks.
inline void expect_alltoall_matches(Context& context) {
  const int me = context.rank();
  const int ranks = context.size();
  std::vector<int32_t> send(ranks * 3), recv(ranks * 3);
  for (int j = 0; j < ranks; ++j) {
    for (int k = 0; k < 3; ++k) send[j * 3 + k] = me * 1000 + j * 10 + k;
  }
  alltoall(context, send.data(), recv.data(), 3, DataType::kInt32);
  for (int i = 0; i < ranks; ++i) {
    for (int k = 0; k < 3; ++k) EXPECT_EQ(recv[i * 3 + k], i * 1000 + me * 10 + k) << "from " << i;
  }
}

}  // namespace gloo_lite::test
