// One collective call of the test matrix (a Case), its readable name, its block layout, and the
// deterministic samples of the full cross-product that the thread and process matrices run.
// The sampling rule is documented at the top of sampling.cc, which implements it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/types.h"
#include "test/collectives/reference.h"

namespace gloo_lite::test {

// Every public collective entry point; the v-variants are kinds of their own.
enum class Kind : uint8_t {
  kAllreduce,
  kReduce,
  kReduceScatter,
  kReduceScatterv,
  kAllgather,
  kAllgatherv,
  kGather,
  kGatherv,
  kScatter,
  kScatterv,
  kBroadcast,
  kAlltoall,
  kAlltoallv,
  kBarrier,
};
extern const std::vector<Kind> kAllKinds;

const char* kind_name(Kind kind);
// Names as they appear in test names (this file's own, not the library's type_name/op_name).
const char* type_label(DataType type);
const char* op_label(ReduceOp op);
algo::Collective collective_of(Kind kind);  // the registry's collective
bool is_reducing(Kind kind);
bool is_rooted(Kind kind);
bool is_variable(Kind kind);  // a v-variant: uneven blocks, zeros included
// Whether the in-place form exists as a choice (broadcast is always in place; alltoall(v) and
// barrier never are).
bool has_in_place_choice(Kind kind);

struct Case {
  Kind kind = Kind::kAllreduce;
  std::string algorithm = "auto";  // "auto" or a registered name
  int size = 1;                    // P
  // The API's count: the whole vector (allreduce, reduce, broadcast), one block (reduce_scatter,
  // allgather, gather, scatter, alltoall), or the mean block of a v-variant.
  size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  // reducing collectives only
  bool in_place = false;
  int root = 0;        // rooted collectives only
  bool check = false;  // CollectiveOptions::check
  // Derived by finish(). `supported` is false when the named algorithm declines the call or the
  // library refuses it (a bitwise op on a float type): every rank then expects InvalidArgument.
  uint64_t seed = 0;  // from the name: inputs and uneven layouts
  bool supported = true;
  bool null_unused = false;  // non-roots pass null for buffers the API lets them omit

  // collective_algorithm_P<P>_n<count>_<type>[_<op>]_<inplace|outofplace>[_root<r>][_check]
  std::string name() const;
  Inputs inputs() const;
  // Elements of rank r's block (uniform: count; v-variants: uneven, some zero).
  std::vector<size_t> blocks() const;
  // Elements rank `from` sends to rank `to` in alltoall(v).
  size_t alltoall_count(int from, int to) const;
  // Normalises root/in_place for the kind and P, and derives seed, supported, null_unused.
  void finish();
};

// GoogleTest prints a Case by its name.
void PrintTo(const Case& c, std::ostream* os);

// Registered algorithm names of the kind's collective, then "auto".
std::vector<std::string> algorithms_for(Kind kind);

// The deterministic samples (see sampling.cc for the rule), ordered by P so that the thread matrix
// reuses one set of contexts per P.
std::vector<Case> thread_matrix();
std::vector<Case> process_matrix();

}  // namespace gloo_lite::test
