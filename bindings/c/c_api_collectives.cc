// The C ABI's collectives. Each one is a start function (check and convert the C arguments,
// then run the C++ blocking form or start the non-blocking one, gloo_lite/call_forms.h) used by
// both of its entry points: blocking (run_blocking) and non-blocking (run_nonblocking hands out
// the work).
#include "bindings/c/c_api_support.h"
#include "gloo_lite/call_forms.h"

using namespace gloo_lite;
using namespace gloo_lite::c_api;

namespace {

using Ctx = gloo_lite_context_t*;
using Opts = const gloo_lite_options_t*;
using Type = gloo_lite_datatype_t;
using Op = gloo_lite_op_t;

Work start_allreduce(bool blocking, Ctx c, const void* in, void* out, size_t n, Type t, Op op,
                     Opts o) {
  return GLOO_LITE_FORMS(allreduce)(blocking, context_of(c), in, out, n, type_of(t), op_of(op),
                                    options_of(o, op));
}
Work start_reduce(bool blocking, Ctx c, const void* in, void* out, size_t n, Type t, Op op,
                  int root, Opts o) {
  return GLOO_LITE_FORMS(reduce)(blocking, context_of(c), in, out, n, type_of(t), op_of(op), root,
                                 options_of(o, op));
}
Work start_reduce_scatter(bool blocking, Ctx c, const void* in, void* out, size_t n, Type t, Op op,
                          Opts o) {
  return GLOO_LITE_FORMS(reduce_scatter)(blocking, context_of(c), in, out, n, type_of(t), op_of(op),
                                         options_of(o, op));
}
Work start_reduce_scatterv(bool blocking, Ctx c, const void* in, void* out, const size_t* n, Type t,
                           Op op, Opts o) {
  return GLOO_LITE_FORMS(reduce_scatterv)(blocking, context_of(c), in, out,
                                          counts_of(c, n, "recv_counts"), type_of(t), op_of(op),
                                          options_of(o, op));
}
Work start_allgather(bool blocking, Ctx c, const void* in, void* out, size_t n, Type t, Opts o) {
  return GLOO_LITE_FORMS(allgather)(blocking, context_of(c), in, out, n, type_of(t), options_of(o));
}
Work start_allgatherv(bool blocking, Ctx c, const void* in, void* out, const size_t* n, Type t,
                      Opts o) {
  return GLOO_LITE_FORMS(allgatherv)(blocking, context_of(c), in, out, counts_of(c, n, "counts"),
                                     type_of(t), options_of(o));
}
Work start_gather(bool blocking, Ctx c, const void* in, void* out, size_t n, Type t, int root,
                  Opts o) {
  return GLOO_LITE_FORMS(gather)(blocking, context_of(c), in, out, n, type_of(t), root,
                                 options_of(o));
}
Work start_gatherv(bool blocking, Ctx c, const void* in, void* out, const size_t* n, Type t,
                   int root, Opts o) {
  return GLOO_LITE_FORMS(gatherv)(blocking, context_of(c), in, out, counts_of(c, n, "counts"),
                                  type_of(t), root, options_of(o));
}
Work start_scatter(bool blocking, Ctx c, const void* in, void* out, size_t n, Type t, int root,
                   Opts o) {
  return GLOO_LITE_FORMS(scatter)(blocking, context_of(c), in, out, n, type_of(t), root,
                                  options_of(o));
}
Work start_scatterv(bool blocking, Ctx c, const void* in, void* out, const size_t* n, Type t,
                    int root, Opts o) {
  return GLOO_LITE_FORMS(scatterv)(blocking, context_of(c), in, out, counts_of(c, n, "counts"),
                                   type_of(t), root, options_of(o));
}
Work start_broadcast(bool blocking, Ctx c, void* data, size_t n, Type t, int root, Opts o) {
  return GLOO_LITE_FORMS(broadcast)(blocking, context_of(c), data, n, type_of(t), root,
                                    options_of(o));
}
Work start_alltoall(bool blocking, Ctx c, const void* in, void* out, size_t n, Type t, Opts o) {
  return GLOO_LITE_FORMS(alltoall)(blocking, context_of(c), in, out, n, type_of(t), options_of(o));
}
Work start_alltoallv(bool blocking, Ctx c, const void* in, const size_t* sn, void* out,
                     const size_t* rn, Type t, Opts o) {
  return GLOO_LITE_FORMS(alltoallv)(blocking, context_of(c), in, counts_of(c, sn, "send_counts"),
                                    out, counts_of(c, rn, "recv_counts"), type_of(t),
                                    options_of(o));
}
Work start_barrier(bool blocking, Ctx c, Opts o) {
  return GLOO_LITE_FORMS(barrier)(blocking, context_of(c), options_of(o));
}

}  // namespace

// Each collective's two entry points are one line each: the blocking form waits for what
// the non-blocking one starts (as in C++), so they cannot drift apart.
extern "C" {

gloo_lite_result_t gloo_lite_allreduce(Ctx c, const void* in, void* out, size_t n, Type t, Op op,
                                       Opts o) {
  return run_blocking(__func__, start_allreduce, c, in, out, n, t, op, o);
}
gloo_lite_result_t gloo_lite_iallreduce(Ctx c, const void* in, void* out, size_t n, Type t, Op op,
                                        Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_allreduce, c, in, out, n, t, op, o);
}

gloo_lite_result_t gloo_lite_reduce(Ctx c, const void* in, void* out, size_t n, Type t, Op op,
                                    int root, Opts o) {
  return run_blocking(__func__, start_reduce, c, in, out, n, t, op, root, o);
}
gloo_lite_result_t gloo_lite_ireduce(Ctx c, const void* in, void* out, size_t n, Type t, Op op,
                                     int root, Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_reduce, c, in, out, n, t, op, root, o);
}

gloo_lite_result_t gloo_lite_reduce_scatter(Ctx c, const void* in, void* out, size_t n, Type t,
                                            Op op, Opts o) {
  return run_blocking(__func__, start_reduce_scatter, c, in, out, n, t, op, o);
}
gloo_lite_result_t gloo_lite_ireduce_scatter(Ctx c, const void* in, void* out, size_t n, Type t,
                                             Op op, Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_reduce_scatter, c, in, out, n, t, op, o);
}

gloo_lite_result_t gloo_lite_reduce_scatterv(Ctx c, const void* in, void* out, const size_t* n,
                                             Type t, Op op, Opts o) {
  return run_blocking(__func__, start_reduce_scatterv, c, in, out, n, t, op, o);
}
gloo_lite_result_t gloo_lite_ireduce_scatterv(Ctx c, const void* in, void* out, const size_t* n,
                                              Type t, Op op, Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_reduce_scatterv, c, in, out, n, t, op, o);
}

gloo_lite_result_t gloo_lite_allgather(Ctx c, const void* in, void* out, size_t n, Type t, Opts o) {
  return run_blocking(__func__, start_allgather, c, in, out, n, t, o);
}
gloo_lite_result_t gloo_lite_iallgather(Ctx c, const void* in, void* out, size_t n, Type t, Opts o,
                                        gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_allgather, c, in, out, n, t, o);
}

gloo_lite_result_t gloo_lite_allgatherv(Ctx c, const void* in, void* out, const size_t* n, Type t,
                                        Opts o) {
  return run_blocking(__func__, start_allgatherv, c, in, out, n, t, o);
}
gloo_lite_result_t gloo_lite_iallgatherv(Ctx c, const void* in, void* out, const size_t* n, Type t,
                                         Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_allgatherv, c, in, out, n, t, o);
}

gloo_lite_result_t gloo_lite_gather(Ctx c, const void* in, void* out, size_t n, Type t, int root,
                                    Opts o) {
  return run_blocking(__func__, start_gather, c, in, out, n, t, root, o);
}
gloo_lite_result_t gloo_lite_igather(Ctx c, const void* in, void* out, size_t n, Type t, int root,
                                     Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_gather, c, in, out, n, t, root, o);
}

gloo_lite_result_t gloo_lite_gatherv(Ctx c, const void* in, void* out, const size_t* n, Type t,
                                     int root, Opts o) {
  return run_blocking(__func__, start_gatherv, c, in, out, n, t, root, o);
}
gloo_lite_result_t gloo_lite_igatherv(Ctx c, const void* in, void* out, const size_t* n, Type t,
                                      int root, Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_gatherv, c, in, out, n, t, root, o);
}

gloo_lite_result_t gloo_lite_scatter(Ctx c, const void* in, void* out, size_t n, Type t, int root,
                                     Opts o) {
  return run_blocking(__func__, start_scatter, c, in, out, n, t, root, o);
}
gloo_lite_result_t gloo_lite_iscatter(Ctx c, const void* in, void* out, size_t n, Type t, int root,
                                      Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_scatter, c, in, out, n, t, root, o);
}

gloo_lite_result_t gloo_lite_scatterv(Ctx c, const void* in, void* out, const size_t* n, Type t,
                                      int root, Opts o) {
  return run_blocking(__func__, start_scatterv, c, in, out, n, t, root, o);
}
gloo_lite_result_t gloo_lite_iscatterv(Ctx c, const void* in, void* out, const size_t* n, Type t,
                                       int root, Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_scatterv, c, in, out, n, t, root, o);
}

gloo_lite_result_t gloo_lite_broadcast(Ctx c, void* data, size_t n, Type t, int root, Opts o) {
  return run_blocking(__func__, start_broadcast, c, data, n, t, root, o);
}
gloo_lite_result_t gloo_lite_ibroadcast(Ctx c, void* data, size_t n, Type t, int root, Opts o,
                                        gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_broadcast, c, data, n, t, root, o);
}

gloo_lite_result_t gloo_lite_alltoall(Ctx c, const void* in, void* out, size_t n, Type t, Opts o) {
  return run_blocking(__func__, start_alltoall, c, in, out, n, t, o);
}
gloo_lite_result_t gloo_lite_ialltoall(Ctx c, const void* in, void* out, size_t n, Type t, Opts o,
                                       gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_alltoall, c, in, out, n, t, o);
}

gloo_lite_result_t gloo_lite_alltoallv(Ctx c, const void* in, const size_t* sn, void* out,
                                       const size_t* rn, Type t, Opts o) {
  return run_blocking(__func__, start_alltoallv, c, in, sn, out, rn, t, o);
}
gloo_lite_result_t gloo_lite_ialltoallv(Ctx c, const void* in, const size_t* sn, void* out,
                                        const size_t* rn, Type t, Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_alltoallv, c, in, sn, out, rn, t, o);
}

gloo_lite_result_t gloo_lite_barrier(Ctx c, Opts o) {
  return run_blocking(__func__, start_barrier, c, o);
}
gloo_lite_result_t gloo_lite_ibarrier(Ctx c, Opts o, gloo_lite_work_t** w) {
  return run_nonblocking(__func__, w, start_barrier, c, o);
}

}  // extern "C"
