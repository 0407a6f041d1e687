// Internal: the one path of every collective call, blocking or not, that the entry points of
// collectives.cc share: describe_call() checks what every collective shares, set_blocks() the
// per-rank counts, prepare() the buffers (and picks the algorithm), launch() joins the call's
// stream. An invalid call throws before launch() and consumes nothing.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "gloo_lite/algorithms/call.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/work.h"

namespace gloo_lite {

class ContextEngine;

namespace algo {
struct Algorithm;
}

namespace detail {

// Whether launch() waits for the call (the blocking forms) or returns its Work at once.
enum class Mode { kBlocking, kNonBlocking };

// Everything a call needs once its turn comes, owned by the call so that it may run later
// (non-blocking calls) than the function that started it returns.
struct Prepared {
  algo::Call call;
  const void* input = nullptr;
  size_t input_bytes = 0;
  void* output = nullptr;
  size_t output_bytes = 0;
  const CollectiveOptions* options = nullptr;  // the caller's, or a non-blocking call's copy
  const algo::Algorithm* algorithm = nullptr;
  std::function<void()> before;  // runs on this rank's buffers when the turn comes
  std::function<void()> after;   // ... after the algorithm succeeded
};

// Validates what every collective shares (root, type, op) and fills the tuner-visible part of
// the call. The stream turn, sequence number and deadline come later, in its turn, once every
// argument has been checked: an invalid call consumes nothing.
algo::Call describe_call(ContextEngine& context, algo::Collective collective, DataType type,
                         ReduceOp op, int root, const CollectiveOptions& options);
// Per-rank blocks and their offsets; returns their sum, checked for overflow (elements and
// bytes) so that no offset derived from them can wrap.
size_t set_blocks(algo::Call& call, const std::vector<size_t>& blocks, const char* what);
// Checks the buffers and picks the algorithm: everything that can be decided alone, before the
// call joins its stream. `input_elements`/`output_elements` size the regions.
Prepared prepare(algo::Call&& call, const void* input, size_t input_elements, void* output,
                 size_t output_elements, const CollectiveOptions& options);
// Joins the call's stream: the one path of every collective (stream.h says who runs it). A
// blocking call's state stays on the caller's stack, since the caller waits; a non-blocking
// call owns a copy of it and of its options.
Work launch(Prepared&& prepared, Mode mode);

}  // namespace detail
}  // namespace gloo_lite
