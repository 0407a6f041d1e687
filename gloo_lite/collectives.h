// The collectives API. Every call is collective over the context: all ranks call it with
// matching arguments (same count, type, op, root; v-variants: same count arrays). Errors are
// exceptions (gloo_lite/base/error.h).
//
// Buffers. Each collective has one in-place form, the rank's own block where it has blocks:
// allreduce, reduce (at the root), reduce_scatter(v) (the result at the buffer's start, as
// MPI_IN_PLACE) and broadcast: input == output; allgather(v): the input is this rank's block of
// the output (input == output + offset of block `rank`, so input == output on rank 0 only);
// gather(v) at the root: the input is the root's block of the output; scatter(v) at the root:
// the output is the root's block of the input. Rooted calls ignore the output (gather, reduce)
// or input (scatter) elsewhere. Any other overlap of input and output is InvalidArgument naming
// the form to pass, input == output included where the own block is not at offset 0: there the
// pointers cannot tell "my block is already in place" from "my data sits at the output's
// start", and reading either one into them gives wrong answers on some rank. Counts
// are elements; a count, a sum of counts or an offset whose byte size does not fit in a buffer
// (PTRDIFF_MAX bytes) is InvalidArgument, raised before any memory is touched. An invalid call
// consumes nothing: the context stays usable.
//
// Threads and order. The collectives with one tag (CollectiveOptions::tag) form one ordered
// stream: every rank must start them in the same order, and the stream runs them in that order,
// one at a time (blocking and non-blocking calls alike: a blocking call started behind queued
// non-blocking ones runs after them). Different tags are independent streams and progress at
// once. Non-blocking calls may be started on one stream from several threads one after the
// other (the order of starting is the order of running). A call started on a stream while a
// *blocking* call of another thread runs there is a program error (two threads racing on one
// tag, so the order could differ between ranks): it throws InvalidArgument and fails the
// context on every rank, naming both calls, and the call it raced with does not report success
// either. (Calls that never overlap on any rank but come in different orders on different ranks
// cannot be told apart by any library: when they differ in collective, type, count or root the
// default call check (docs/transport.md) reports a MismatchError; identical calls are simply
// matched in order.) A call started on a stream from inside its running call, on the thread
// running it (a custom reduction calling a collective on its own tag), would wait for itself:
// it throws InvalidArgument saying so and consumes nothing. Context::split is a tag-0
// collective too. docs/execution-model.md says who runs each call and what it costs.
//
// Failures. A collective that fails on one rank fails its context: the rank tells every peer
// why (they raise with that cause and that rank's number, within milliseconds, not at their
// deadline), the error names the call ("allreduce #12 on tag 0 (float32 sum, 1024 elements,
// ring) on rank 1 of 4"), and later calls on the context fail at once with the first cause;
// create a new context to go on (a non-blocking call finishes with that error in its Work). A
// call's timeout counts from when it starts running, not from when it was queued. A timeout
// also names the ranks that never arrived, on every rank (gloo_lite/hang_report.h).
// Context::flight_record() shows the recent calls.
//
// Mismatches. Ranks that disagree on a call (collective, type, op, root, counts, algorithm) are
// caught by default, at no extra round trip (docs/transport.md, "Calls"): every message carries
// its call's fingerprint, and a rank that receives a message of another call -- where a
// receive takes it, or where it waits with no receive to take it: of a call this rank has
// already passed on that tag, or another call under the same sequence number -- fails the
// context with MismatchError naming both calls, and every other rank raises it too. A rank
// raises it in that call or at the latest in its next call on the context: a call that
// finished without hearing from the odd rank (a broadcast root that only sends, a rank that
// hears only from its parent) returns its own arguments' right result, and the mismatch
// surfaces at its next call that waits for the others (a barrier, an allreduce; a second
// broadcast may also complete first, and so may an allreduce or a barrier to which the rank
// that found the mismatch had sent its part before it looked: then the call after it). A rank that
// received the other call's message and only destroys the context after the bad call logs one WARN
// with the mismatch at close. Ranks that exchange no message under the call's tag cannot see each
// other's disagreement; GLOO_LITE_CHECK=1 (CollectiveOptions::check) compares every pair before
// each call for that guarantee.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#if __cplusplus >= 202002L
#include <span>
#include <type_traits>
#endif

#include "gloo_lite/base/error.h"
#include "gloo_lite/context.h"
#include "gloo_lite/types.h"
#include "gloo_lite/work.h"

namespace gloo_lite {

struct CollectiveOptions {
  // "auto" (the tuner picks) or an algorithm name: ring, halving_doubling, recursive_doubling,
  // tree, bruck, pairwise, dissemination, direct. Overrides GLOO_LITE_ALGO for this call.
  std::string algorithm = "auto";
  // 0: the context's timeout.
  std::chrono::milliseconds timeout{0};
  // Independent streams of collectives on one context (e.g. one per thread) use different tags;
  // collectives with the same tag must be called in the same order on every rank.
  uint16_t tag = 0;
  // For ReduceOp::kCustom.
  ReduceFunction custom;
  // Compare (collective, type, count, root, op) across ranks before moving data and throw
  // MismatchError on disagreement. Also on with GLOO_LITE_CHECK=1.
  bool check = false;
};

// The reducing collectives (allreduce, reduce, reduce_scatter(v)) take any ReduceOp: kSum,
// kProd, kMin, kMax, kAvg (the sum divided by P), kCustom (options.custom), and the bitwise
// kBand, kBor, kBxor, which need an integer type (a float type is InvalidArgument, raised
// before anything moves). reduction.h has the exact rules of each.
void allreduce(Context& context, const void* input, void* output, size_t count, DataType type,
               ReduceOp op, const CollectiveOptions& options = {});
// Result lands in `output` on `root` only (output may be null elsewhere).
void reduce(Context& context, const void* input, void* output, size_t count, DataType type,
            ReduceOp op, int root, const CollectiveOptions& options = {});
// input holds size*recv_count elements; rank r receives block r, reduced.
void reduce_scatter(Context& context, const void* input, void* output, size_t recv_count,
                    DataType type, ReduceOp op, const CollectiveOptions& options = {});
// Variable blocks: input holds sum(recv_counts); rank r receives recv_counts[r] elements.
void reduce_scatterv(Context& context, const void* input, void* output,
                     const std::vector<size_t>& recv_counts, DataType type, ReduceOp op,
                     const CollectiveOptions& options = {});
// output holds size*count elements, block r from rank r. In-place: input == output + rank*count.
void allgather(Context& context, const void* input, void* output, size_t count, DataType type,
               const CollectiveOptions& options = {});
void allgatherv(Context& context, const void* input, void* output,
                const std::vector<size_t>& counts, DataType type,
                const CollectiveOptions& options = {});
void gather(Context& context, const void* input, void* output, size_t count, DataType type,
            int root, const CollectiveOptions& options = {});
void gatherv(Context& context, const void* input, void* output, const std::vector<size_t>& counts,
             DataType type, int root, const CollectiveOptions& options = {});
void scatter(Context& context, const void* input, void* output, size_t count, DataType type,
             int root, const CollectiveOptions& options = {});
void scatterv(Context& context, const void* input, void* output, const std::vector<size_t>& counts,
              DataType type, int root, const CollectiveOptions& options = {});
// In place on every rank: root's `data` is copied to every rank's `data`.
void broadcast(Context& context, void* data, size_t count, DataType type, int root,
               const CollectiveOptions& options = {});
// input and output hold size*count elements; block j of rank i goes to block i of rank j.
void alltoall(Context& context, const void* input, void* output, size_t count, DataType type,
              const CollectiveOptions& options = {});
// send_counts[j] elements go to rank j, recv_counts[j] come from rank j, packed in rank order.
void alltoallv(Context& context, const void* input, const std::vector<size_t>& send_counts,
               void* output, const std::vector<size_t>& recv_counts, DataType type,
               const CollectiveOptions& options = {});
void barrier(Context& context, const CollectiveOptions& options = {});

// Non-blocking forms. Same arguments and the same checks: an invalid call throws here and
// starts nothing. The call joins its tag's stream (CollectiveOptions::tag) and runs after the
// calls started before it on that tag, blocking or not, while the caller goes on; the Work
// says when it has finished and how (gloo_lite/work.h). The buffers (and count vectors are
// copied) belong to the call until then. The blocking forms above are these plus Work::wait.
Work iallreduce(Context& context, const void* input, void* output, size_t count, DataType type,
                ReduceOp op, const CollectiveOptions& options = {});
Work ireduce(Context& context, const void* input, void* output, size_t count, DataType type,
             ReduceOp op, int root, const CollectiveOptions& options = {});
Work ireduce_scatter(Context& context, const void* input, void* output, size_t recv_count,
                     DataType type, ReduceOp op, const CollectiveOptions& options = {});
Work ireduce_scatterv(Context& context, const void* input, void* output,
                      const std::vector<size_t>& recv_counts, DataType type, ReduceOp op,
                      const CollectiveOptions& options = {});
Work iallgather(Context& context, const void* input, void* output, size_t count, DataType type,
                const CollectiveOptions& options = {});
Work iallgatherv(Context& context, const void* input, void* output,
                 const std::vector<size_t>& counts, DataType type,
                 const CollectiveOptions& options = {});
Work igather(Context& context, const void* input, void* output, size_t count, DataType type,
             int root, const CollectiveOptions& options = {});
Work igatherv(Context& context, const void* input, void* output, const std::vector<size_t>& counts,
              DataType type, int root, const CollectiveOptions& options = {});
Work iscatter(Context& context, const void* input, void* output, size_t count, DataType type,
              int root, const CollectiveOptions& options = {});
Work iscatterv(Context& context, const void* input, void* output, const std::vector<size_t>& counts,
               DataType type, int root, const CollectiveOptions& options = {});
Work ibroadcast(Context& context, void* data, size_t count, DataType type, int root,
                const CollectiveOptions& options = {});
Work ialltoall(Context& context, const void* input, void* output, size_t count, DataType type,
               const CollectiveOptions& options = {});
Work ialltoallv(Context& context, const void* input, const std::vector<size_t>& send_counts,
                void* output, const std::vector<size_t>& recv_counts, DataType type,
                const CollectiveOptions& options = {});
Work ibarrier(Context& context, const CollectiveOptions& options = {});

// Typed conveniences: the element type gives the DataType.
template <typename T>
void allreduce(Context& context, std::vector<T>& data, ReduceOp op = ReduceOp::kSum,
               const CollectiveOptions& options = {}) {
  allreduce(context, data.data(), data.data(), data.size(), DataTypeOf<T>::value, op, options);
}
template <typename T>
void allreduce(Context& context, const T* input, T* output, size_t count,
               ReduceOp op = ReduceOp::kSum, const CollectiveOptions& options = {}) {
  allreduce(context, input, output, count, DataTypeOf<T>::value, op, options);
}
template <typename T>
void broadcast(Context& context, std::vector<T>& data, int root,
               const CollectiveOptions& options = {}) {
  broadcast(context, data.data(), data.size(), DataTypeOf<T>::value, root, options);
}
template <typename T>
std::vector<T> allgather(Context& context, const std::vector<T>& input,
                         const CollectiveOptions& options = {}) {
  std::vector<T> output(input.size() * context.size());
  allgather(context, input.data(), output.data(), input.size(), DataTypeOf<T>::value, options);
  return output;
}

#if __cplusplus >= 202002L
// std::span overloads for C++20 callers (the library itself is C++17).
template <typename T, size_t N>
void allreduce(Context& context, std::span<T, N> data, ReduceOp op = ReduceOp::kSum,
               const CollectiveOptions& options = {}) {
  allreduce(context, data.data(), data.data(), data.size(), DataTypeOf<std::remove_cv_t<T>>::value,
            op, options);
}
template <typename T, size_t N, size_t M>
void allreduce(Context& context, std::span<const T, N> input, std::span<T, M> output,
               ReduceOp op = ReduceOp::kSum, const CollectiveOptions& options = {}) {
  if (input.size() != output.size()) {
    throw InvalidArgument("allreduce: input and output spans differ in size");
  }
  allreduce(context, input.data(), output.data(), input.size(), DataTypeOf<T>::value, op, options);
}
template <typename T, size_t N>
void broadcast(Context& context, std::span<T, N> data, int root,
               const CollectiveOptions& options = {}) {
  broadcast(context, data.data(), data.size(), DataTypeOf<T>::value, root, options);
}
template <typename T, size_t N, size_t M>
void allgather(Context& context, std::span<const T, N> input, std::span<T, M> output,
               const CollectiveOptions& options = {}) {
  if (output.size() != input.size() * static_cast<size_t>(context.size())) {
    throw InvalidArgument("allgather: the output span must hold size() times the input");
  }
  allgather(context, input.data(), output.data(), input.size(), DataTypeOf<T>::value, options);
}
#endif

}  // namespace gloo_lite
