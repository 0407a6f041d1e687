// The C ABI's work handles (wait, test, error, algorithm, source, free) and point-to-point
// transfers, blocking and non-blocking, on the C++ Context::isend/irecv/irecv_any.
#include <vector>

#include "bindings/c/c_api_support.h"
#include "gloo_lite/call_forms.h"

using namespace gloo_lite;
using namespace gloo_lite::c_api;

namespace {

// The arguments every transfer shares: a rank of `context` and a buffer of `bytes`.
Context& checked(gloo_lite_context_t* c, int peer, const void* data, size_t bytes) {
  Context& context = context_of(c);
  if (peer < 0 || peer >= context.size()) {
    bad_argument("peer " + std::to_string(peer) + " is not a rank of this context (0.." +
                 std::to_string(context.size() - 1) + ")");
  }
  if (data == nullptr && bytes > 0) {
    bad_argument("data is NULL for " + std::to_string(bytes) + " bytes");
  }
  return context;
}

// Point-to-point, both forms (the blocking one in the calling thread, like the collectives').
Work start_send(bool blocking, gloo_lite_context_t* c, int peer, const void* data, size_t bytes,
                uint64_t tag, int64_t timeout_ms) {
  return GLOO_LITE_MEMBER_FORMS(send)(blocking, checked(c, peer, data, bytes), peer, data, bytes,
                                      p2p_tag_of(tag), timeout_of(timeout_ms, "timeout_ms"));
}
Work start_recv(bool blocking, gloo_lite_context_t* c, int peer, void* data, size_t bytes,
                uint64_t tag, int64_t timeout_ms) {
  return GLOO_LITE_MEMBER_FORMS(recv)(blocking, checked(c, peer, data, bytes), peer, data, bytes,
                                      p2p_tag_of(tag), timeout_of(timeout_ms, "timeout_ms"));
}
// The peers of a receive from any of them, checked.
std::vector<int> peers_of(gloo_lite_context_t* c, const int* peers, size_t peer_count, void* data,
                          size_t bytes) {
  if (peer_count == 0) bad_argument("peer_count is 0; name at least one peer");
  required(peers, "peers");
  for (size_t i = 0; i < peer_count; ++i) checked(c, peers[i], data, bytes);
  return std::vector<int>(peers, peers + peer_count);
}
Work start_recv_any(bool blocking, gloo_lite_context_t* c, const int* peers, size_t peer_count,
                    void* data, size_t bytes, uint64_t tag, int64_t timeout_ms) {
  (void)blocking;  // gloo_lite_recv_any waits itself: it must report the source
  return context_of(c).irecv_any(peers_of(c, peers, peer_count, data, bytes), data, bytes,
                                 p2p_tag_of(tag), timeout_of(timeout_ms, "timeout_ms"));
}

}  // namespace

extern "C" {

gloo_lite_result_t gloo_lite_work_wait(gloo_lite_work_t* work, int64_t timeout_ms) {
  return guarded(__func__, [&]() -> gloo_lite_result_t {
    Work& w = work_of(work);
    if (timeout_ms == GLOO_LITE_WAIT_FOREVER) {
      w.wait();
      return GLOO_LITE_SUCCESS;
    }
    if (timeout_ms < 0) {
      bad_argument("timeout_ms is " + std::to_string(timeout_ms) +
                   "; use GLOO_LITE_WAIT_FOREVER (-1), 0 to poll, or a positive number of "
                   "milliseconds");
    }
    // Deadline::after saturates: INT64_MAX waits as long as GLOO_LITE_WAIT_FOREVER.
    return w.wait(std::chrono::milliseconds(timeout_ms)) ? GLOO_LITE_SUCCESS
                                                         : GLOO_LITE_IN_PROGRESS;
  });
}

gloo_lite_result_t gloo_lite_work_test(gloo_lite_work_t* work, int* done) {
  return guarded(__func__, [&] {
    Work& w = work_of(work);
    required(done, "done") = w.test() ? 1 : 0;
  });
}

gloo_lite_result_t gloo_lite_work_error(gloo_lite_work_t* work, gloo_lite_result_t* status,
                                        const char** message) {
  return guarded(__func__, [&] {
    Work& w = work_of(work);
    gloo_lite_result_t& code = required(status, "status");
    work->message.clear();
    if (!w.test()) {
      code = GLOO_LITE_IN_PROGRESS;
    } else if (std::exception_ptr error = w.error()) {
      code = classify(error, &work->message);
    } else {
      code = GLOO_LITE_SUCCESS;
    }
    if (message != nullptr) *message = work->message.c_str();
  });
}

gloo_lite_result_t gloo_lite_work_algorithm(gloo_lite_work_t* work, const char** algorithm) {
  return guarded(__func__, [&] {
    Work& w = work_of(work);
    const char*& out = required(algorithm, "algorithm");
    work->algorithm = w.algorithm();
    out = work->algorithm.c_str();
  });
}

gloo_lite_result_t gloo_lite_work_source(gloo_lite_work_t* work, int* source) {
  return guarded(__func__, [&] { required(source, "source") = work_of(work).source(); });
}

gloo_lite_result_t gloo_lite_work_free(gloo_lite_work_t* work) {
  return guarded(__func__, [&] {
    if (work == nullptr) return;  // like free(NULL)
    live(work, "work");           // a destroyed handle is refused, not freed twice
    retire(std::unique_ptr<gloo_lite_work>(work));
  });
}

gloo_lite_result_t gloo_lite_send(gloo_lite_context_t* c, int peer, const void* data, size_t bytes,
                                  uint64_t tag, int64_t timeout_ms) {
  return run_blocking(__func__, start_send, c, peer, data, bytes, tag, timeout_ms);
}
gloo_lite_result_t gloo_lite_isend(gloo_lite_context_t* c, int peer, const void* data, size_t bytes,
                                   uint64_t tag, int64_t timeout_ms, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_send, c, peer, data, bytes, tag, timeout_ms);
}

gloo_lite_result_t gloo_lite_recv(gloo_lite_context_t* c, int peer, void* data, size_t bytes,
                                  uint64_t tag, int64_t timeout_ms) {
  return run_blocking(__func__, start_recv, c, peer, data, bytes, tag, timeout_ms);
}
gloo_lite_result_t gloo_lite_irecv(gloo_lite_context_t* c, int peer, void* data, size_t bytes,
                                   uint64_t tag, int64_t timeout_ms, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_recv, c, peer, data, bytes, tag, timeout_ms);
}

gloo_lite_result_t gloo_lite_recv_any(gloo_lite_context_t* c, const int* peers, size_t peer_count,
                                      void* data, size_t bytes, uint64_t tag, int64_t timeout_ms,
                                      int* source) {
  return guarded(__func__, [&] {
    int& matched = required(source, "source");
    matched = -1;
    std::vector<int> from = peers_of(c, peers, peer_count, data, bytes);
    matched = context_of(c).recv_any(from, data, bytes, p2p_tag_of(tag),
                                     timeout_of(timeout_ms, "timeout_ms"));
  });
}
gloo_lite_result_t gloo_lite_irecv_any(gloo_lite_context_t* c, const int* peers, size_t peer_count,
                                       void* data, size_t bytes, uint64_t tag, int64_t timeout_ms,
                                       gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_recv_any, c, peers, peer_count, data, bytes, tag,
                         timeout_ms);
}

}  // extern "C"
