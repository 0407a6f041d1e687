#include "gloo_lite/transport/abort_cause.h"

namespace gloo_lite::transport {

int decode_origin(uint64_t origin_plus_one, int sender, int size) {
  if (origin_plus_one == 0 || origin_plus_one > static_cast<uint64_t>(size)) return sender;
  return static_cast<int>(origin_plus_one - 1);
}

}  // namespace gloo_lite::transport
