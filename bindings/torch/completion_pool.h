// Threads that complete torch futures whose callbacks may block. A future handed out by
// getFuture() can carry callbacks from user code (DDP comm hooks chain on it), and such a
// callback may wait for another collective of the same group -- PowerSGD's hook waits on a
// second allreduce inside its first callback. Run on the stream's worker, that wait could
// never end (the worker is the thread that would run the second allreduce). So those
// completions go here: a pool that starts a thread whenever every thread it has is busy, so
// a blocked callback never holds up another completion. Threads stay for reuse (a handful at
// most: one per completion blocked at once); they are detached and end with the process.
#pragma once

#include <functional>

namespace gloo_lite::torch_backend {

// Runs `task` soon on a pool thread.
void complete_in_pool(std::function<void()> task);

}  // namespace gloo_lite::torch_backend
