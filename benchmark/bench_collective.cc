#include "bench_collective.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "bench_values.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/call_forms.h"

namespace gloo_lite::bench {

double CollectiveInfo::bus_factor(int ranks) const {
  double n = ranks;
  switch (kind) {
    case Kind::kAllreduce:
      return 2 * (n - 1) / n;
    case Kind::kReduceScatter:
    case Kind::kAllgather:
    case Kind::kGather:
    case Kind::kScatter:
    case Kind::kAlltoall:
      return (n - 1) / n;
    case Kind::kReduce:
    case Kind::kBroadcast:
      return 1;
    case Kind::kBarrier:
      break;
  }
  return 0;
}

namespace {

// A row of the benchmark's table: the library's facts about `kind` (gloo_lite/collective_info.h)
// and the forms the benchmark can time.
CollectiveInfo row(Kind kind, bool out_of_place, bool in_place) {
  const gloo_lite::CollectiveInfo& library = collective_info(kind);
  return {kind,
          library.name,
          library.has_op,
          library.rooted,
          library.per_rank_blocks || library.per_pair_blocks,
          out_of_place,
          in_place};
}

}  // namespace

const std::vector<CollectiveInfo>& all_collectives() {
  // row(kind, has an out-of-place form, has an in-place form)
  static const std::vector<CollectiveInfo> table = {
      row(Kind::kAllreduce, true, true),      //
      row(Kind::kReduce, true, true),         //
      row(Kind::kReduceScatter, true, true),  //
      row(Kind::kAllgather, true, true),      //
      row(Kind::kGather, true, true),         //
      row(Kind::kScatter, true, true),        //
      row(Kind::kBroadcast, false, true),     // in place only
      row(Kind::kAlltoall, true, false),      // out of place only
      row(Kind::kBarrier, true, false),       //
  };
  return table;
}

const CollectiveInfo& find_collective(const std::string& name) {
  std::string known;
  for (const CollectiveInfo& info : all_collectives()) {
    if (name == info.name) return info;
    known += std::string(known.empty() ? "" : ", ") + info.name;
  }
  throw InvalidArgument("unknown collective '" + name + "'; known: " + known + ", all");
}

Shape shape_of(const CollectiveInfo& info, uint64_t bytes, DataType type, int ranks) {
  Shape shape;
  if (info.kind == Kind::kBarrier) return shape;
  size_t element = element_size(type);
  shape.elements = bytes / element;
  shape.count = shape.elements;
  if (info.blocked) {
    shape.count = shape.elements / ranks;
    shape.elements = shape.count * ranks;
  }
  shape.bytes = shape.elements * element;
  return shape;
}

Buffer::Buffer(size_t bytes) {
  constexpr size_t kPage = 4096;
  size_t rounded = (bytes + kPage - 1) / kPage * kPage + kPage;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kPage, rounded)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), 0, rounded);
}

void Buffer::Free::operator()(uint8_t* pointer) const { std::free(pointer); }

CollectiveCall::CollectiveCall(Context& context, const Setup& setup, Buffers& buffers)
    : context_(context), setup_(setup), rank_(context.rank()), ranks_(context.size()) {
  uint8_t* in = buffers.input.data();
  uint8_t* out = buffers.output.data();
  size_t block = setup.shape.count * element_size(setup.type);
  bool is_root = rank_ == setup.root;
  input_ = in;
  output_ = out;
  if (!setup.in_place) return;
  // In place as the library defines it (gloo_lite/collectives.h, MPI_IN_PLACE): one buffer, with
  // this rank's block inside it where the collective has blocks; rooted collectives alias at the
  // root only.
  switch (setup.info->kind) {
    case Kind::kAllgather:
      input_ = out + rank_ * block;
      break;
    case Kind::kGather:
      if (is_root) input_ = out + rank_ * block;
      break;
    case Kind::kScatter:
      if (is_root) output_ = in + rank_ * block;
      break;
    default:  // allreduce, reduce, reduce_scatter (result at the start), broadcast
      input_ = out;
  }
}

// Both forms through one switch (gloo_lite/call_forms.h): `blocking` runs the call, else it
// starts it and returns its Work.
Work CollectiveCall::call(bool blocking) const {
  const Setup& s = setup_;
  size_t count = s.shape.count;
  switch (s.info->kind) {
    case Kind::kAllreduce:
      return GLOO_LITE_FORMS(allreduce)(blocking, context_, input_, output_, count, s.type, s.op,
                                        s.options);
    case Kind::kReduce:
      return GLOO_LITE_FORMS(reduce)(blocking, context_, input_, output_, count, s.type, s.op,
                                     s.root, s.options);
    case Kind::kReduceScatter:
      return GLOO_LITE_FORMS(reduce_scatter)(blocking, context_, input_, output_, count, s.type,
                                             s.op, s.options);
    case Kind::kAllgather:
      return GLOO_LITE_FORMS(allgather)(blocking, context_, input_, output_, count, s.type,
                                        s.options);
    case Kind::kGather:
      return GLOO_LITE_FORMS(gather)(blocking, context_, input_, output_, count, s.type, s.root,
                                     s.options);
    case Kind::kScatter:
      return GLOO_LITE_FORMS(scatter)(blocking, context_, input_, output_, count, s.type, s.root,
                                      s.options);
    case Kind::kBroadcast:
      return GLOO_LITE_FORMS(broadcast)(blocking, context_, output_, count, s.type, s.root,
                                        s.options);
    case Kind::kAlltoall:
      return GLOO_LITE_FORMS(alltoall)(blocking, context_, input_, output_, count, s.type,
                                       s.options);
    case Kind::kBarrier:
      return GLOO_LITE_FORMS(barrier)(blocking, context_, s.options);
  }
  return Work();
}

void CollectiveCall::run() const { call(/*blocking=*/true); }

Work CollectiveCall::start() const { return call(/*blocking=*/false); }

namespace {

struct Extents {
  size_t input = 0;   // elements the call reads on this rank
  size_t output = 0;  // elements it writes
};

Extents extents_of(Kind kind, size_t count, int ranks, bool is_root) {
  size_t all = count * ranks;
  switch (kind) {
    case Kind::kAllreduce:
    case Kind::kBroadcast:
      return {count, count};
    case Kind::kReduce:
      return {count, is_root ? count : 0};
    case Kind::kReduceScatter:
      return {all, count};
    case Kind::kAllgather:
      return {count, all};
    case Kind::kGather:
      return {count, is_root ? all : 0};
    case Kind::kScatter:
      return {is_root ? all : 0, count};
    case Kind::kAlltoall:
      return {all, all};
    case Kind::kBarrier:
      break;
  }
  return {};
}

// All-ones bytes: NaN in every float type and -1 or the largest value in the integer types,
// which bench_values never produces; an element the call fails to write then counts as wrong.
constexpr int kPoison = 0xFF;

}  // namespace

void CollectiveCall::fill_inputs() const {
  const Setup& s = setup_;
  Extents extents = extents_of(s.info->kind, s.shape.count, ranks_, rank_ == s.root);
  // Poison first: in place, the input lies inside the output.
  std::memset(output_, kPoison, extents.output * element_size(s.type));
  ValuePattern pattern(s.type, s.op, ranks_, s.info->reduces);
  fill_values(s.type, input_, extents.input, pattern, rank_, 0);
}

size_t CollectiveCall::count_wrong() const {
  const Setup& s = setup_;
  size_t c = s.shape.count;
  Extents extents = extents_of(s.info->kind, c, ranks_, rank_ == s.root);
  ValuePattern pattern(s.type, s.op, ranks_, s.info->reduces);
  auto wrong = [&](auto expected) {
    return bench::count_wrong(s.type, output_, extents.output, expected);
  };
  int rank = rank_;
  switch (s.info->kind) {
    case Kind::kAllreduce:
    case Kind::kReduce:
      return wrong([&](size_t i) { return pattern.reduced(i); });
    case Kind::kReduceScatter:
      return wrong([&](size_t i) { return pattern.reduced(rank * c + i); });
    case Kind::kAllgather:
    case Kind::kGather:
      return wrong([&](size_t j) { return pattern.input(static_cast<int>(j / c), j % c); });
    case Kind::kScatter:
      return wrong([&](size_t i) { return pattern.input(s.root, rank * c + i); });
    case Kind::kBroadcast:
      return wrong([&](size_t i) { return pattern.input(s.root, i); });
    case Kind::kAlltoall:
      return wrong(
          [&](size_t j) { return pattern.input(static_cast<int>(j / c), rank * c + j % c); });
    case Kind::kBarrier:
      break;
  }
  return 0;
}

}  // namespace gloo_lite::bench
