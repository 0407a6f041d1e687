// A mesh's buffering options, apart from the rest of the transport contract (transport.h) so that
// the public Context (gloo_lite/context.h), whose ContextOptions carries them, does not include it.
#pragma once

#include <cstddef>

namespace gloo_lite {
namespace transport {

struct MeshOptions {
  // Eager/rendezvous switch and buffering bounds; 0 means the transport's default/knob.
  size_t eager_bytes = 0;
  size_t unexpected_bytes = 0;
};

}  // namespace transport
}  // namespace gloo_lite
