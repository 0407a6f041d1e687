// THE SAMPLING RULE of the collectives matrix.
//
// The full cross-product is P in {1..9, 12, 13, 16} x count in {0, 1, 2, 3, 7, P-1, P+1, 1000,
// 65537, 4Mi} x 10 types x 9 ops (band, bor, bxor on the 6 integer types only) x (every
// registered algorithm + "auto") x {in place, out of
// place} x 13 collective entry points (+ barrier), with roots P-1 or P/2: far too many to run.
// We run a deterministic subset. Every random choice comes from splitmix64 seeded with the rule
// number and the loop indices, so the list of cases (and their names) is the same on every run
// and machine; only a change of the registry (an algorithm added) changes it. The rules:
//  R1  every kind x every algorithm (and auto) x every type (x every op for the reducing
//      kinds), with P and a small count (0..1000) drawn.
//  R2  every kind x every P (the algorithm cycles with P; in place alternates; every 4th with
//      options.check on).
//  R3  every kind x every small count (0, 1, 2, 3, 7, P-1, P+1, 1000).
//  R4  every kind with an in-place form x every algorithm x {in place, out of place}.
//  R5  count 65537 of a 4- or 8-byte type (beyond eager limits and 256 KiB pipelining chunks):
//      every kind x every algorithm x {a power-of-two P from 2, 4, 8; another from 3, 5, 6, 7, 9}.
//  R6  count 4Mi: a fixed handful (allreduce with every algorithm at P = 5, and auto for reduce,
//      reduce_scatter, allgather, gather, scatter, broadcast, alltoall), small types where the
//      buffers scale with P.
//  R7  1200 cases drawn uniformly from the cross-product with small counts (1 in 8 with check).
//  R8  the bitwise ops (band, bor, bxor; a list of their own, so that adding them left R1-R7 as
//      they were): every reducing kind x every algorithm x every bitwise op x every integer
//      type, P and a small count drawn; per reducing kind x algorithm, one at count 65537; per
//      reducing kind x bitwise op, one with a float type, which every rank must refuse.
//  Barrier: every algorithm x every P.
// Roots are drawn from {P-1, P/2}, except R7, which also draws 0. When a drawn call is one that
// the named algorithm declines (its `supports` says no), up to 16 redraws look for one it takes;
// failing that, the case stays and expects InvalidArgument on every rank.
// Duplicates (same name) are dropped. The process matrix is a separate fixed list: every kind at
// P = 2, 3, 4, 8, the algorithm, type and op cycling, one case at 65537; and every reducing kind
// once with a bitwise op and an integer type (op, type, P and algorithm cycling).
#include <algorithm>
#include <functional>
#include <set>

#include "test/collectives/cases.h"

namespace gloo_lite::test {
namespace {

const std::vector<int> kSizes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16};
const std::vector<DataType> kTypes = {
    DataType::kInt8,    DataType::kUint8,   DataType::kInt32,   DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,  DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat32, DataType::kFloat64,
};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                    ReduceOp::kMax, ReduceOp::kAvg,  ReduceOp::kCustom};
const std::vector<ReduceOp> kBitwiseOps = {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
const std::vector<DataType> kIntegerTypes = {DataType::kInt8,  DataType::kUint8,
                                             DataType::kInt32, DataType::kUint32,
                                             DataType::kInt64, DataType::kUint64};
const std::vector<DataType> kFloatTypes = {DataType::kFloat16, DataType::kBFloat16,
                                           DataType::kFloat32, DataType::kFloat64};
const std::vector<Kind> kReducingKinds = {Kind::kAllreduce, Kind::kReduce, Kind::kReduceScatter,
                                          Kind::kReduceScatterv};
constexpr size_t k4Mi = size_t{4} << 20;
constexpr uint64_t kRandomCases = 1200;

std::vector<size_t> small_counts(int p) {
  return {0, 1, 2, 3, 7, static_cast<size_t>(p - 1), static_cast<size_t>(p + 1), 1000};
}

// A stream of deterministic draws, keyed by the rule and loop indices that ask for it.
class Draws {
 public:
  explicit Draws(const std::vector<uint64_t>& key) {
    for (uint64_t part : key) state_ = mix64(state_ ^ part);
  }
  uint64_t next() { return state_ = mix64(state_); }
  template <typename T>
  const T& pick(const std::vector<T>& values) {
    return values[next() % values.size()];
  }
  bool one_in(int n) { return next() % n == 0; }

 private:
  uint64_t state_ = 0x243F6A8885A308D3ull;
};

class Builder {
 public:
  void add(Case c) {
    c.finish();
    if (names_.insert(c.name()).second) cases_.push_back(c);
  }
  // Draws until the algorithm supports the call (at most 16 tries); keeps the first draw if none.
  void add_supported(std::initializer_list<uint64_t> key, const std::function<Case(Draws&)>& draw) {
    Case first;
    for (uint64_t attempt = 0; attempt < 16; ++attempt) {
      std::vector<uint64_t> parts(key);
      parts.push_back(attempt);
      Draws draws(parts);
      Case c = draw(draws);
      c.finish();
      if (attempt == 0) first = c;
      if (c.supported) return add(c);
    }
    add(first);
  }
  std::vector<Case> take() {
    std::stable_sort(cases_.begin(), cases_.end(),
                     [](const Case& a, const Case& b) { return a.size < b.size; });
    return std::move(cases_);
  }

 private:
  std::vector<Case> cases_;
  std::set<std::string> names_;
};

// A case with everything not fixed by the rule drawn.
Case drawn(Kind kind, const std::string& algorithm, Draws& draws) {
  Case c;
  c.kind = kind;
  c.algorithm = algorithm;
  c.size = draws.pick(kSizes);
  c.count = draws.pick(small_counts(c.size));
  c.type = draws.pick(kTypes);
  c.op = draws.pick(kOps);
  c.in_place = draws.one_in(2);
  c.root = draws.one_in(2) ? c.size - 1 : c.size / 2;
  return c;
}

uint64_t index_of(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) - names.begin();
}

void rule_types_and_ops(Builder& builder) {  // R1 and barrier
  for (Kind kind : kAllKinds) {
    auto algorithms = algorithms_for(kind);
    for (const std::string& algorithm : algorithms) {
      uint64_t a = index_of(algorithms, algorithm);
      if (kind == Kind::kBarrier) {
        for (int p : kSizes) {
          Case c;
          c.kind = kind;
          c.algorithm = algorithm;
          c.size = p;
          c.type = DataType::kUint8;
          builder.add(c);
        }
        continue;
      }
      for (size_t t = 0; t < kTypes.size(); ++t) {
        for (size_t o = 0; o < kOps.size(); ++o) {
          if (!is_reducing(kind) && o > 0) break;
          builder.add_supported({1, uint64_t(kind), a, t, o}, [&](Draws& draws) {
            Case c = drawn(kind, algorithm, draws);
            c.type = kTypes[t];
            c.op = kOps[o];
            return c;
          });
        }
      }
    }
  }
}

void rule_sizes_and_counts(Builder& builder) {  // R2, R3, R4
  for (Kind kind : kAllKinds) {
    if (kind == Kind::kBarrier) continue;
    auto algorithms = algorithms_for(kind);
    for (size_t i = 0; i < kSizes.size(); ++i) {
      builder.add_supported({2, uint64_t(kind), i}, [&](Draws& draws) {
        Case c = drawn(kind, algorithms[(i + draws.next() % 2) % algorithms.size()], draws);
        c.size = kSizes[i];
        c.count = draws.pick(small_counts(c.size));
        c.root = i % 2 ? c.size - 1 : c.size / 2;
        c.in_place = i % 2 == 0;
        c.check = i % 4 == 3;
        return c;
      });
    }
    for (size_t n = 0; n < small_counts(1).size(); ++n) {
      builder.add_supported({3, uint64_t(kind), n}, [&](Draws& draws) {
        Case c = drawn(kind, algorithms[(n + draws.next() % 2) % algorithms.size()], draws);
        c.count = small_counts(c.size)[n];
        return c;
      });
    }
    if (!has_in_place_choice(kind)) continue;
    for (size_t a = 0; a < algorithms.size(); ++a) {
      for (bool in_place : {false, true}) {
        builder.add_supported({4, uint64_t(kind), a, in_place}, [&](Draws& draws) {
          Case c = drawn(kind, algorithms[a], draws);
          c.in_place = in_place;
          return c;
        });
      }
    }
  }
}

void rule_large_counts(Builder& builder) {  // R5, R6
  // Wide types, so that 65537 elements exceed the transports' eager limits and the algorithms'
  // pipelining chunks (256 KiB).
  const std::vector<std::vector<int>> sizes = {{2, 4, 8}, {3, 5, 6, 7, 9}};
  const std::vector<DataType> wide = {DataType::kInt32,  DataType::kUint32,  DataType::kInt64,
                                      DataType::kUint64, DataType::kFloat32, DataType::kFloat64};
  for (Kind kind : kAllKinds) {
    if (kind == Kind::kBarrier) continue;
    auto algorithms = algorithms_for(kind);
    for (size_t a = 0; a < algorithms.size(); ++a) {
      for (uint64_t s = 0; s < sizes.size(); ++s) {
        builder.add_supported({5, uint64_t(kind), a, s}, [&](Draws& draws) {
          Case c = drawn(kind, algorithms[a], draws);
          c.size = draws.pick(sizes[s]);
          c.count = 65537;
          c.type = draws.pick(wide);
          c.root = draws.one_in(2) ? c.size - 1 : c.size / 2;
          return c;
        });
      }
    }
  }
  const std::vector<DataType> allreduce_types = {DataType::kFloat32, DataType::kBFloat16,
                                                 DataType::kInt32, DataType::kFloat64};
  auto algorithms = algorithms_for(Kind::kAllreduce);
  for (size_t a = 0; a < algorithms.size(); ++a) {
    Case c;
    c.algorithm = algorithms[a];
    c.size = 5;
    c.count = k4Mi;
    c.type = allreduce_types[a % allreduce_types.size()];
    c.in_place = a % 2 == 1;
    builder.add(c);
  }
  struct Big {
    Kind kind;
    int size;
    DataType type;
    ReduceOp op;
    int root;
  };
  const Big bigs[] = {
      {Kind::kReduce, 4, DataType::kFloat32, ReduceOp::kMax, 2},
      {Kind::kReduceScatter, 3, DataType::kFloat16, ReduceOp::kSum, 0},
      {Kind::kAllgather, 3, DataType::kUint8, ReduceOp::kSum, 0},
      {Kind::kGather, 3, DataType::kInt8, ReduceOp::kSum, 2},
      {Kind::kScatter, 4, DataType::kUint8, ReduceOp::kSum, 3},
      {Kind::kBroadcast, 6, DataType::kInt32, ReduceOp::kSum, 3},
      {Kind::kAlltoall, 2, DataType::kInt8, ReduceOp::kSum, 0},
  };
  for (const Big& big : bigs) {
    Case c;
    c.kind = big.kind;
    c.size = big.size;
    c.count = k4Mi;
    c.type = big.type;
    c.op = big.op;
    c.root = big.root;
    builder.add(c);
  }
}

void rule_random(Builder& builder) {                                // R7
  std::vector<Kind> kinds(kAllKinds.begin(), kAllKinds.end() - 1);  // without barrier
  for (uint64_t k = 0; k < kRandomCases; ++k) {
    builder.add_supported({7, k}, [&](Draws& draws) {
      Kind kind = draws.pick(kinds);
      Case c = drawn(kind, draws.pick(algorithms_for(kind)), draws);
      int roots[] = {c.size - 1, c.size / 2, 0};
      c.root = roots[draws.next() % 3];
      c.check = draws.one_in(8);
      return c;
    });
  }
}

void rule_bitwise(Builder& builder) {  // R8
  for (Kind kind : kReducingKinds) {
    auto algorithms = algorithms_for(kind);
    for (size_t a = 0; a < algorithms.size(); ++a) {
      for (size_t o = 0; o < kBitwiseOps.size(); ++o) {
        for (size_t t = 0; t < kIntegerTypes.size(); ++t) {
          builder.add_supported({8, uint64_t(kind), a, o, t}, [&](Draws& draws) {
            Case c = drawn(kind, algorithms[a], draws);
            c.type = kIntegerTypes[t];
            c.op = kBitwiseOps[o];
            return c;
          });
        }
      }
      builder.add_supported({8, uint64_t(kind), a, 100}, [&](Draws& draws) {
        Case c = drawn(kind, algorithms[a], draws);
        c.size = draws.pick(std::vector<int>{2, 3, 4, 5, 8});
        c.count = 65537;
        c.type = draws.pick(kIntegerTypes);
        c.op = draws.pick(kBitwiseOps);
        c.root = draws.one_in(2) ? c.size - 1 : c.size / 2;
        return c;
      });
    }
    for (size_t o = 0; o < kBitwiseOps.size(); ++o) {
      Draws draws({8, uint64_t(kind), 200, o});
      Case c = drawn(kind, draws.pick(algorithms), draws);
      c.size = 3;
      c.type = kFloatTypes[(uint64_t(kind) + o) % kFloatTypes.size()];
      c.op = kBitwiseOps[o];
      builder.add(c);
    }
  }
}

}  // namespace

std::vector<Case> thread_matrix() {
  Builder builder;
  rule_types_and_ops(builder);
  rule_sizes_and_counts(builder);
  rule_large_counts(builder);
  rule_random(builder);
  rule_bitwise(builder);
  return builder.take();
}

std::vector<Case> process_matrix() {
  Builder builder;
  const std::vector<int> sizes = {2, 3, 4, 8};
  const std::vector<size_t> counts = {65537, 1000, 7, 9};
  for (size_t k = 0; k < kAllKinds.size(); ++k) {
    Kind kind = kAllKinds[k];
    auto algorithms = algorithms_for(kind);
    for (size_t i = 0; i < sizes.size(); ++i) {
      Case c;
      c.kind = kind;
      c.algorithm = algorithms[(k + i) % algorithms.size()];
      c.size = sizes[i];
      c.count = counts[i];
      c.type = kTypes[(k + 3 * i) % kTypes.size()];
      c.op = kOps[(k + i) % kOps.size()];
      c.in_place = i % 2 == 1;
      c.root = i % 2 ? c.size - 1 : c.size / 2;
      builder.add(c);
    }
  }
  // The bitwise ops, each width once; the thread matrix (R8) has the full cross-product.
  const DataType bitwise_types[] = {DataType::kInt32, DataType::kUint8, DataType::kUint64,
                                    DataType::kInt64};
  for (size_t k = 0; k < kReducingKinds.size(); ++k) {
    Kind kind = kReducingKinds[k];
    auto algorithms = algorithms_for(kind);
    Case c;
    c.kind = kind;
    c.algorithm = algorithms[k % algorithms.size()];
    c.size = sizes[(k + 1) % sizes.size()];
    c.count = 1000;
    c.type = bitwise_types[k];
    c.op = kBitwiseOps[k % kBitwiseOps.size()];
    c.in_place = k % 2 == 0;
    c.root = c.size - 1;
    builder.add(c);
  }
  return builder.take();
}

}  // namespace gloo_lite::test
