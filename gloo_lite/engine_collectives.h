// Internal: collectives on an engine (gloo_lite/context_engine.h), for core's own calls made
// without a public handle: the split's allgather of (color, key) and the network probe's
// allreduce, which runs while the context is being created. The same path as the public calls
// of gloo_lite/collectives.h (checks, stream, fingerprint, flight record).
#pragma once

#include <cstddef>

#include "gloo_lite/collectives.h"

namespace gloo_lite {

class ContextEngine;

void allreduce(ContextEngine& engine, const void* input, void* output, size_t count, DataType type,
               ReduceOp op, const CollectiveOptions& options = {});
void allgather(ContextEngine& engine, const void* input, void* output, size_t count, DataType type,
               const CollectiveOptions& options = {});

}  // namespace gloo_lite
