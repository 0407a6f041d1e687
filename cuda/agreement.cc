// The Communicator's agreement at creation (cuda/agreement.h).
#include "cuda/agreement.h"

#include <array>

#include "gloo_lite/collectives.h"

namespace gloo_lite::cuda {

Agreement agree(Context& context, const Agreement& mine, uint16_t tag) {
  if (context.size() < 2) return mine;
  std::array<double, 5> values = {mine.speeds.copy, mine.speeds.device_reduce,
                                  mine.speeds.host_reduce, mine.speeds.wire,
                                  mine.gpudirect ? 1.0 : 0.0};
  CollectiveOptions options;
  options.tag = tag;
  allreduce(context, values.data(), values.data(), values.size(), DataType::kFloat64,
            ReduceOp::kMin, options);
  Agreement agreed;
  agreed.speeds = {values[0], values[1], values[2], values[3]};
  agreed.gpudirect = values[4] == 1.0;
  return agreed;
}

bool reduces_on_device(ReduceOn on, const Agreement& agreed, DataType type, ReduceOp op,
                       size_t count, int ranks, size_t slot_bytes) {
  if (on != ReduceOn::kAuto) return on == ReduceOn::kDevice;
  if (op == ReduceOp::kCustom) return false;
  return choose_reduce_on(agreed.speeds, count * element_size(type), ranks, slot_bytes) ==
         ReduceOn::kDevice;
}

}  // namespace gloo_lite::cuda
