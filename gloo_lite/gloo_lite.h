/* gloo_lite's C ABI: collectives and point-to-point transfers between the ranks of a job, for
 * programs and frameworks that embed gloo_lite from C (or from any language with a C FFI).
 * It is C99 and C++ compatible and is implemented in libgloo_lite.so (SONAME libgloo_lite.so.0,
 * pkg-config gloo_lite-c, CMake target gloo_lite::shared) on top of the C++ API
 * (gloo_lite/collectives.h), whose semantics it keeps: read that header for what each
 * collective does with its buffers, and docs/execution-model.md for non-blocking work.
 *
 * Conventions.
 *  - Every function returns a gloo_lite_result_t (except the few that return a string) and
 *    never lets an exception escape. A result other than
 *    GLOO_LITE_SUCCESS comes with a message, gloo_lite_last_error(), that names the function,
 *    the argument or the operation and ranks involved, and what to do.
 *  - Every argument is checked before anything starts: a NULL handle or out-pointer, an
 *    element type or op outside its enum, a bad root, a NULL buffer with a non-zero count...
 *    give GLOO_LITE_ERR_INVALID_ARGUMENT and consume nothing (the context stays usable).
 *  - Handles are opaque. Out-pointers receive NULL when a creating call fails.
 *  - Counts are elements of the given type, sizes of point-to-point transfers are bytes.
 *    v-variants take arrays of gloo_lite_context_size() counts (copied by the call).
 *  - Collectives are collective: every rank of the context calls them in the same order with
 *    matching arguments (per tag, see gloo_lite_options_t.tag).
 *  - A failure (timeout, lost peer, ...) fails the context for good, on every rank, with the
 *    first cause: later calls report it at once. Destroy it and create a new one to go on.
 *
 * Example (every rank, started with `gloo_lite_run -n 4 -- ./program`):
 *
 *   gloo_lite_context_t* ctx;
 *   float data[4] = {1, 2, 3, 4};
 *   if (gloo_lite_init_from_env(0, &ctx) != GLOO_LITE_SUCCESS ||
 *       gloo_lite_allreduce(ctx, data, data, 4, GLOO_LITE_FLOAT32, GLOO_LITE_SUM, NULL) !=
 *           GLOO_LITE_SUCCESS) {
 *     fprintf(stderr, "%s\n", gloo_lite_last_error());
 *   }
 *   gloo_lite_destroy(ctx);
 */
#ifndef GLOO_LITE_GLOO_LITE_H_
#define GLOO_LITE_GLOO_LITE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ----------------------------------------------------------------------------- */

/* The version of this header; gloo_lite_version() is the library's. The build checks that they
 * equal the project version in CMakeLists.txt. */
#define GLOO_LITE_VERSION_MAJOR 0
#define GLOO_LITE_VERSION_MINOR 1
#define GLOO_LITE_VERSION_PATCH 0
#define GLOO_LITE_VERSION_STRING "0.1.0"
/* One comparable number: 10000 * major + 100 * minor + patch. */
#define GLOO_LITE_VERSION \
  (GLOO_LITE_VERSION_MAJOR * 10000 + GLOO_LITE_VERSION_MINOR * 100 + GLOO_LITE_VERSION_PATCH)

/* "MAJOR.MINOR.PATCH" of the library loaded at run time; static storage. */
const char* gloo_lite_version(void);

/* ---- Results and errors ------------------------------------------------------------------ */

/* Results, element types and ops are plain 32-bit integers holding the values of the enums below
 * (not the enum types themselves): a caller may pass any value, which the library refuses with
 * GLOO_LITE_ERR_INVALID_ARGUMENT, and an out-of-range value in a C++ enum would be undefined. */
typedef int32_t gloo_lite_result_t;
enum gloo_lite_result_code {
  GLOO_LITE_SUCCESS = 0,
  GLOO_LITE_ERR_INVALID_ARGUMENT = 1, /* bad argument; nothing was started */
  GLOO_LITE_ERR_TIMEOUT = 2,          /* a deadline passed (the message names missing ranks) */
  GLOO_LITE_ERR_CONNECTION = 3,       /* a peer died, aborted or the network failed */
  GLOO_LITE_ERR_MISMATCH = 4,         /* ranks disagree about a call (count, type, root...) */
  GLOO_LITE_ERR_STORE = 5,            /* the rendezvous store failed or is unreachable */
  GLOO_LITE_ERR_INTERNAL = 6,         /* anything else (out of memory, a bug: report it) */
  /* Not an error: gloo_lite_work_wait's timeout passed before the work finished. */
  GLOO_LITE_IN_PROGRESS = 7,
  /* The CUDA collectives cannot run here: the library was built without CUDA, or there is no
   * usable GPU (the message says which). */
  GLOO_LITE_ERR_UNAVAILABLE = 8
};

/* The message of the last call on this thread that failed: the empty string once a later call
 * returned GLOO_LITE_SUCCESS or GLOO_LITE_IN_PROGRESS (the functions that return a string,
 * like this one, leave it as it is). Never NULL. Valid until the next gloo_lite call on this
 * thread: copy it to keep it. */
const char* gloo_lite_last_error(void);

/* "success", "invalid argument", "timeout", ...; "unknown result" for other values. */
const char* gloo_lite_result_name(gloo_lite_result_t result);

/* ---- Element types and reduction operations (as gloo_lite/types.h) ----------------------- */

typedef int32_t gloo_lite_datatype_t; /* an enum gloo_lite_datatype value */
enum gloo_lite_datatype {
  GLOO_LITE_INT8 = 0,
  GLOO_LITE_UINT8 = 1,
  GLOO_LITE_INT32 = 2,
  GLOO_LITE_UINT32 = 3,
  GLOO_LITE_INT64 = 4,
  GLOO_LITE_UINT64 = 5,
  GLOO_LITE_FLOAT16 = 6,  /* IEEE binary16, passed as uint16_t bits */
  GLOO_LITE_BFLOAT16 = 7, /* bfloat16, passed as uint16_t bits */
  GLOO_LITE_FLOAT32 = 8,
  GLOO_LITE_FLOAT64 = 9
};

typedef int32_t gloo_lite_op_t; /* an enum gloo_lite_op value */
enum gloo_lite_op {
  GLOO_LITE_SUM = 0,
  GLOO_LITE_PROD = 1,
  GLOO_LITE_MIN = 2,
  GLOO_LITE_MAX = 3,
  GLOO_LITE_AVG = 4,
  GLOO_LITE_CUSTOM = 5, /* gloo_lite_options_t.custom */
  /* Elementwise &, |, ^ (MPI_BAND, MPI_BOR, MPI_BXOR), for the integer types only: with a
   * float type the call returns GLOO_LITE_ERR_INVALID_ARGUMENT before anything moves. */
  GLOO_LITE_BAND = 6,
  GLOO_LITE_BOR = 7,
  GLOO_LITE_BXOR = 8
};

/* Bytes per element of `type` into *size. */
gloo_lite_result_t gloo_lite_type_size(gloo_lite_datatype_t type, size_t* size);

/* A custom reduction: combine `count` elements of `in` into `inout` (inout[i] = f(inout[i],
 * in[i])). It must be associative and commutative: algorithms combine partial results in an
 * order that depends on the algorithm and the number of ranks. It may run on a library thread
 * (non-blocking work) and must not call gloo_lite. */
typedef void (*gloo_lite_reduce_fn)(void* inout, const void* in, size_t count, void* user_data);

/* Per-call options. NULL, a zero-initialised struct ({0} in C, {} in C++) and
 * GLOO_LITE_OPTIONS_INIT all mean the defaults: the tuner's algorithm, the context's timeout, tag
 * 0, no call check. */
typedef struct gloo_lite_options {
  /* NULL, "" or "auto": the tuner picks; else ring, halving_doubling, recursive_doubling, tree,
   * bruck, pairwise, dissemination, direct (overrides GLOO_LITE_ALGO for this call). */
  const char* algorithm;
  /* Milliseconds; 0: the context's timeout. Negative is an invalid argument. */
  int64_t timeout_ms;
  /* Independent ordered streams of collectives on one context (e.g. one per thread). */
  uint16_t tag;
  /* Non-zero: compare (collective, type, count, root, op) across ranks before moving data and
   * fail with GLOO_LITE_ERR_MISMATCH on disagreement (also on with GLOO_LITE_CHECK=1). */
  int check;
  /* For GLOO_LITE_CUSTOM (required then, ignored otherwise), with its user_data. For
   * non-blocking calls both must stay valid until the work has finished. */
  gloo_lite_reduce_fn custom;
  void* user_data;
} gloo_lite_options_t;

#define GLOO_LITE_OPTIONS_INIT \
  { NULL, 0, 0, 0, NULL, NULL }

/* ---- Contexts ---------------------------------------------------------------------------- */

typedef struct gloo_lite_context gloo_lite_context_t;

/* Joins the job described by the environment that launchers set (gloo_lite_run, torchrun,
 * Open MPI, PMI, Slurm: see gloo_lite/bootstrap.h), within timeout_ms (0: GLOO_LITE_TIMEOUT_MS),
 * which is also the default timeout of every later call. */
gloo_lite_result_t gloo_lite_init_from_env(int64_t timeout_ms, gloo_lite_context_t** context);

/* Joins `size` ranks meeting in the store at `store_url` (file:///dir, tcp://host:port,
 * redis://host:port) under `prefix` (NULL or "": none; use one per job), as rank `rank`.
 * The transport comes from the environment (GLOO_LITE_TRANSPORT, GLOO_LITE_IFNAME, ...). */
gloo_lite_result_t gloo_lite_init(const char* store_url, const char* prefix, int rank, int size,
                                  int64_t timeout_ms, gloo_lite_context_t** context);

/* Ends this rank's part of the context: frees the handle and closes its connections. NULL is
 * a no-op. Work still running on it is cancelled and its handles report an error (see
 * docs/execution-model.md); their buffers are released once gloo_lite_work_test says done.
 * The handle may not be used again: a call with it (a second destroy too) is
 * GLOO_LITE_ERR_INVALID_ARGUMENT, "destroyed context", for as long as the library keeps it
 * marked (the next 64 destroys); later it is freed memory. */
gloo_lite_result_t gloo_lite_destroy(gloo_lite_context_t* context);

gloo_lite_result_t gloo_lite_context_rank(const gloo_lite_context_t* context, int* rank);
gloo_lite_result_t gloo_lite_context_size(const gloo_lite_context_t* context, int* size);

/* Like MPI_Comm_split, a collective: ranks with equal `color` form a new context, ordered by
 * (key, old rank); a negative color gives *new_context = NULL (this rank joins none). The new
 * context is independent: destroy it too. */
gloo_lite_result_t gloo_lite_split(gloo_lite_context_t* context, int color, int key,
                                   gloo_lite_context_t** new_context);

/* Fails the context on this rank with `reason` (NULL: a generic one) and tells the peers, whose
 * calls then fail with GLOO_LITE_ERR_CONNECTION naming this rank. Destroy it afterwards. */
gloo_lite_result_t gloo_lite_abort(gloo_lite_context_t* context, const char* reason);

/* ---- Non-blocking work ------------------------------------------------------------------- */

/* A work handle is one started operation. Use each handle from one thread at a time (any
 * thread); other handles and the context may be used meanwhile from other threads, within
 * the stream rules of gloo_lite/collectives.h (one call at a time per tag). */
typedef struct gloo_lite_work gloo_lite_work_t;

/* For gloo_lite_work_wait: no limit. */
#define GLOO_LITE_WAIT_FOREVER (-1)

/* Waits at most timeout_ms (GLOO_LITE_WAIT_FOREVER: until done; 0: polls; an amount too long
 * for the clock, up to INT64_MAX, also waits until done; any other negative value is
 * GLOO_LITE_ERR_INVALID_ARGUMENT): GLOO_LITE_SUCCESS when it finished well, its error when it
 * failed, GLOO_LITE_IN_PROGRESS when it is still running (it goes on under the deadline it was
 * started with; wait again). */
gloo_lite_result_t gloo_lite_work_wait(gloo_lite_work_t* work, int64_t timeout_ms);
/* *done = 1 once finished (well or not), else 0; never blocks. */
gloo_lite_result_t gloo_lite_work_test(gloo_lite_work_t* work, int* done);
/* *status: GLOO_LITE_IN_PROGRESS while running, then GLOO_LITE_SUCCESS or the error code;
 * *message (may be NULL if unwanted): the error's message, "" otherwise, owned by the handle
 * and valid until the next call on it. */
gloo_lite_result_t gloo_lite_work_error(gloo_lite_work_t* work, gloo_lite_result_t* status,
                                        const char** message);
/* The algorithm that ran ("ring", "tree", ..., "p2p"; "" before it started), owned by the
 * handle and valid until the next call on it. */
gloo_lite_result_t gloo_lite_work_algorithm(gloo_lite_work_t* work, const char** algorithm);
/* The rank a gloo_lite_irecv_any matched; -1 for other work and until known. */
gloo_lite_result_t gloo_lite_work_source(gloo_lite_work_t* work, int* source);
/* Frees the handle; NULL is a no-op. It does not cancel the operation: its buffers belong to
 * it until it has finished, so wait before freeing them. The handle may not be used again: a
 * call with it (a second free too) is GLOO_LITE_ERR_INVALID_ARGUMENT, "destroyed work handle",
 * for as long as the library keeps it marked (the next 64 frees); later it is freed memory. */
gloo_lite_result_t gloo_lite_work_free(gloo_lite_work_t* work);

/* ---- Collectives ------------------------------------------------------------------------- */
/* Each comes blocking and non-blocking (gloo_lite_i<name>, which returns a work handle in
 * *work and lets the caller go on; its buffers belong to it until it has finished). Same
 * semantics as the C++ functions of gloo_lite/collectives.h. In place is one form per call:
 * input == output for allreduce, reduce, reduce_scatter(v) and broadcast; for allgather(v) and
 * gather(v) (at the root) the input at this rank's block of output, for scatter(v) (at the
 * root) the output at the root's block of input; any other overlap (input == output too where
 * that block is not at offset 0) is GLOO_LITE_ERR_INVALID_ARGUMENT. Rooted calls ignore the
 * output (gather, reduce) or input (scatter) on non-root ranks, which may be NULL. `options`
 * may be NULL. */

gloo_lite_result_t gloo_lite_allreduce(gloo_lite_context_t* context, const void* input,
                                       void* output, size_t count, gloo_lite_datatype_t type,
                                       gloo_lite_op_t op, const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_iallreduce(gloo_lite_context_t* context, const void* input,
                                        void* output, size_t count, gloo_lite_datatype_t type,
                                        gloo_lite_op_t op, const gloo_lite_options_t* options,
                                        gloo_lite_work_t** work);

/* The result lands in `output` on `root` only. */
gloo_lite_result_t gloo_lite_reduce(gloo_lite_context_t* context, const void* input, void* output,
                                    size_t count, gloo_lite_datatype_t type, gloo_lite_op_t op,
                                    int root, const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_ireduce(gloo_lite_context_t* context, const void* input, void* output,
                                     size_t count, gloo_lite_datatype_t type, gloo_lite_op_t op,
                                     int root, const gloo_lite_options_t* options,
                                     gloo_lite_work_t** work);

/* input holds size * recv_count elements; rank r receives block r, reduced. */
gloo_lite_result_t gloo_lite_reduce_scatter(gloo_lite_context_t* context, const void* input,
                                            void* output, size_t recv_count,
                                            gloo_lite_datatype_t type, gloo_lite_op_t op,
                                            const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_ireduce_scatter(gloo_lite_context_t* context, const void* input,
                                             void* output, size_t recv_count,
                                             gloo_lite_datatype_t type, gloo_lite_op_t op,
                                             const gloo_lite_options_t* options,
                                             gloo_lite_work_t** work);
/* input holds sum(recv_counts); rank r receives recv_counts[r] elements. */
gloo_lite_result_t gloo_lite_reduce_scatterv(gloo_lite_context_t* context, const void* input,
                                             void* output, const size_t* recv_counts,
                                             gloo_lite_datatype_t type, gloo_lite_op_t op,
                                             const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_ireduce_scatterv(gloo_lite_context_t* context, const void* input,
                                              void* output, const size_t* recv_counts,
                                              gloo_lite_datatype_t type, gloo_lite_op_t op,
                                              const gloo_lite_options_t* options,
                                              gloo_lite_work_t** work);

/* output holds size * count elements, block r from rank r. */
gloo_lite_result_t gloo_lite_allgather(gloo_lite_context_t* context, const void* input,
                                       void* output, size_t count, gloo_lite_datatype_t type,
                                       const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_iallgather(gloo_lite_context_t* context, const void* input,
                                        void* output, size_t count, gloo_lite_datatype_t type,
                                        const gloo_lite_options_t* options,
                                        gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_allgatherv(gloo_lite_context_t* context, const void* input,
                                        void* output, const size_t* counts,
                                        gloo_lite_datatype_t type,
                                        const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_iallgatherv(gloo_lite_context_t* context, const void* input,
                                         void* output, const size_t* counts,
                                         gloo_lite_datatype_t type,
                                         const gloo_lite_options_t* options,
                                         gloo_lite_work_t** work);

gloo_lite_result_t gloo_lite_gather(gloo_lite_context_t* context, const void* input, void* output,
                                    size_t count, gloo_lite_datatype_t type, int root,
                                    const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_igather(gloo_lite_context_t* context, const void* input, void* output,
                                     size_t count, gloo_lite_datatype_t type, int root,
                                     const gloo_lite_options_t* options, gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_gatherv(gloo_lite_context_t* context, const void* input, void* output,
                                     const size_t* counts, gloo_lite_datatype_t type, int root,
                                     const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_igatherv(gloo_lite_context_t* context, const void* input, void* output,
                                      const size_t* counts, gloo_lite_datatype_t type, int root,
                                      const gloo_lite_options_t* options, gloo_lite_work_t** work);

gloo_lite_result_t gloo_lite_scatter(gloo_lite_context_t* context, const void* input, void* output,
                                     size_t count, gloo_lite_datatype_t type, int root,
                                     const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_iscatter(gloo_lite_context_t* context, const void* input, void* output,
                                      size_t count, gloo_lite_datatype_t type, int root,
                                      const gloo_lite_options_t* options, gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_scatterv(gloo_lite_context_t* context, const void* input, void* output,
                                      const size_t* counts, gloo_lite_datatype_t type, int root,
                                      const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_iscatterv(gloo_lite_context_t* context, const void* input,
                                       void* output, const size_t* counts,
                                       gloo_lite_datatype_t type, int root,
                                       const gloo_lite_options_t* options, gloo_lite_work_t** work);

/* In place on every rank: root's `data` is copied to every rank's `data`. */
gloo_lite_result_t gloo_lite_broadcast(gloo_lite_context_t* context, void* data, size_t count,
                                       gloo_lite_datatype_t type, int root,
                                       const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_ibroadcast(gloo_lite_context_t* context, void* data, size_t count,
                                        gloo_lite_datatype_t type, int root,
                                        const gloo_lite_options_t* options,
                                        gloo_lite_work_t** work);

/* input and output hold size * count elements; block j of rank i goes to block i of rank j. */
gloo_lite_result_t gloo_lite_alltoall(gloo_lite_context_t* context, const void* input, void* output,
                                      size_t count, gloo_lite_datatype_t type,
                                      const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_ialltoall(gloo_lite_context_t* context, const void* input,
                                       void* output, size_t count, gloo_lite_datatype_t type,
                                       const gloo_lite_options_t* options, gloo_lite_work_t** work);
/* send_counts[j] elements go to rank j, recv_counts[j] come from rank j, packed in rank order. */
gloo_lite_result_t gloo_lite_alltoallv(gloo_lite_context_t* context, const void* input,
                                       const size_t* send_counts, void* output,
                                       const size_t* recv_counts, gloo_lite_datatype_t type,
                                       const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_ialltoallv(gloo_lite_context_t* context, const void* input,
                                        const size_t* send_counts, void* output,
                                        const size_t* recv_counts, gloo_lite_datatype_t type,
                                        const gloo_lite_options_t* options,
                                        gloo_lite_work_t** work);

gloo_lite_result_t gloo_lite_barrier(gloo_lite_context_t* context,
                                     const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_ibarrier(gloo_lite_context_t* context,
                                      const gloo_lite_options_t* options, gloo_lite_work_t** work);

/* ---- Point-to-point ---------------------------------------------------------------------- */
/* Host buffers of `bytes` bytes; tags are the application's (0 <= tag < 2^63, a space apart
 * from the collectives'); a send matches the receive of the same (peer, tag) in order.
 * timeout_ms 0: the context's timeout; any positive amount, INT64_MAX included, bounds the
 * call (amounts past the clock's range mean no limit). */

gloo_lite_result_t gloo_lite_send(gloo_lite_context_t* context, int peer, const void* data,
                                  size_t bytes, uint64_t tag, int64_t timeout_ms);
gloo_lite_result_t gloo_lite_isend(gloo_lite_context_t* context, int peer, const void* data,
                                   size_t bytes, uint64_t tag, int64_t timeout_ms,
                                   gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_recv(gloo_lite_context_t* context, int peer, void* data, size_t bytes,
                                  uint64_t tag, int64_t timeout_ms);
gloo_lite_result_t gloo_lite_irecv(gloo_lite_context_t* context, int peer, void* data, size_t bytes,
                                   uint64_t tag, int64_t timeout_ms, gloo_lite_work_t** work);
/* Receives from whichever of the `peer_count` ranks in `peers` sends first; *source gets it
 * (non-blocking: gloo_lite_work_source). */
gloo_lite_result_t gloo_lite_recv_any(gloo_lite_context_t* context, const int* peers,
                                      size_t peer_count, void* data, size_t bytes, uint64_t tag,
                                      int64_t timeout_ms, int* source);
gloo_lite_result_t gloo_lite_irecv_any(gloo_lite_context_t* context, const int* peers,
                                       size_t peer_count, void* data, size_t bytes, uint64_t tag,
                                       int64_t timeout_ms, gloo_lite_work_t** work);

/* ---- CUDA collectives (docs/cuda.md) ----------------------------------------------------- */
/* The collectives on device memory through a staging pipeline. Declared in every build; where
 * the library has no CUDA, or the machine no usable GPU, creating a communicator on a CUDA device
 * returns GLOO_LITE_ERR_UNAVAILABLE saying why. The host stand-in layer (no GPU: "device" memory
 * is host memory, streams are worker threads) always works and is for tests.
 *
 * Streams are `void*`: a cudaStream_t (0, the legacy default stream, included) with a CUDA
 * device, or one from gloo_lite_cuda_stream_create with the host stand-in. The i-forms are
 * stream-ordered: they enqueue and return; work enqueued on the stream afterwards sees the result.
 * Their `work` (may be NULL when not wanted) finishes when the stream has been let go, with the
 * call's error if any. The other forms block until the result is in the output buffer. Calls of
 * one communicator run in the order made, which must be the same on every rank. Arguments and
 * options are as for the host collectives (options->tag is the CPU tag the pipeline uses). */

typedef struct gloo_lite_cuda_comm gloo_lite_cuda_comm_t;

/* gloo_lite_cuda_comm_create's `device` for the host stand-in layer. */
#define GLOO_LITE_CUDA_HOST_STAND_IN (-1)

/* Staging pipeline options; NULL or zero fields: defaults (4 slots of 4 MiB; where received chunks
 * are combined chosen per call from speeds measured and agreed at creation, docs/cuda.md). */
typedef struct gloo_lite_cuda_options {
  size_t slot_bytes;    /* bytes per pinned staging slot */
  int slots;            /* number of slots (at least 2) */
  int reduce_on_device; /* non-zero: always combine received chunks with device kernels */
  int64_t max_delay_us; /* host stand-in only: maximum injected delay per stream operation */
} gloo_lite_cuda_options_t;

/* SUCCESS when a CUDA device can be used here; GLOO_LITE_ERR_UNAVAILABLE otherwise, with why in
 * gloo_lite_last_error() (e.g. "built without CUDA", "cudaGetDeviceCount: ..."). */
gloo_lite_result_t gloo_lite_cuda_available(void);
/* A communicator on `context` (which must outlive it) for CUDA device `device` (>= 0) or the
 * host stand-in (GLOO_LITE_CUDA_HOST_STAND_IN). Allocates the staging pool once. */
gloo_lite_result_t gloo_lite_cuda_comm_create(gloo_lite_context_t* context, int device,
                                              const gloo_lite_cuda_options_t* options,
                                              gloo_lite_cuda_comm_t** comm);
/* Waits for every call made, then frees the pool. NULL is accepted. */
gloo_lite_result_t gloo_lite_cuda_comm_destroy(gloo_lite_cuda_comm_t* comm);
/* "cuda (device 0: ...)" or "host stand-in (...)"; valid while the communicator lives. */
gloo_lite_result_t gloo_lite_cuda_comm_layer(const gloo_lite_cuda_comm_t* comm, const char** name);
/* Blocks until every call made so far has finished; returns the first error among them. */
gloo_lite_result_t gloo_lite_cuda_comm_synchronize(gloo_lite_cuda_comm_t* comm);

/* Streams of the communicator's layer, and the host waiting for one. */
gloo_lite_result_t gloo_lite_cuda_stream_create(gloo_lite_cuda_comm_t* comm, void** stream);
gloo_lite_result_t gloo_lite_cuda_stream_destroy(gloo_lite_cuda_comm_t* comm, void* stream);
gloo_lite_result_t gloo_lite_cuda_stream_synchronize(gloo_lite_cuda_comm_t* comm, void* stream);

gloo_lite_result_t gloo_lite_cuda_allreduce(gloo_lite_cuda_comm_t* comm, const void* input,
                                            void* output, size_t count, gloo_lite_datatype_t type,
                                            gloo_lite_op_t op, void* stream,
                                            const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_cuda_iallreduce(gloo_lite_cuda_comm_t* comm, const void* input,
                                             void* output, size_t count, gloo_lite_datatype_t type,
                                             gloo_lite_op_t op, void* stream,
                                             const gloo_lite_options_t* options,
                                             gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_cuda_broadcast(gloo_lite_cuda_comm_t* comm, void* data, size_t count,
                                            gloo_lite_datatype_t type, int root, void* stream,
                                            const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_cuda_ibroadcast(gloo_lite_cuda_comm_t* comm, void* data, size_t count,
                                             gloo_lite_datatype_t type, int root, void* stream,
                                             const gloo_lite_options_t* options,
                                             gloo_lite_work_t** work);
/* output is written on `root` only; it may be NULL elsewhere. */
gloo_lite_result_t gloo_lite_cuda_reduce(gloo_lite_cuda_comm_t* comm, const void* input,
                                         void* output, size_t count, gloo_lite_datatype_t type,
                                         gloo_lite_op_t op, int root, void* stream,
                                         const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_cuda_ireduce(gloo_lite_cuda_comm_t* comm, const void* input,
                                          void* output, size_t count, gloo_lite_datatype_t type,
                                          gloo_lite_op_t op, int root, void* stream,
                                          const gloo_lite_options_t* options,
                                          gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_cuda_allgather(gloo_lite_cuda_comm_t* comm, const void* input,
                                            void* output, size_t count, gloo_lite_datatype_t type,
                                            void* stream, const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_cuda_iallgather(gloo_lite_cuda_comm_t* comm, const void* input,
                                             void* output, size_t count, gloo_lite_datatype_t type,
                                             void* stream, const gloo_lite_options_t* options,
                                             gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_cuda_reduce_scatter(gloo_lite_cuda_comm_t* comm, const void* input,
                                                 void* output, size_t recv_count,
                                                 gloo_lite_datatype_t type, gloo_lite_op_t op,
                                                 void* stream, const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_cuda_ireduce_scatter(gloo_lite_cuda_comm_t* comm, const void* input,
                                                  void* output, size_t recv_count,
                                                  gloo_lite_datatype_t type, gloo_lite_op_t op,
                                                  void* stream, const gloo_lite_options_t* options,
                                                  gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_cuda_alltoall(gloo_lite_cuda_comm_t* comm, const void* input,
                                           void* output, size_t count, gloo_lite_datatype_t type,
                                           void* stream, const gloo_lite_options_t* options);
gloo_lite_result_t gloo_lite_cuda_ialltoall(gloo_lite_cuda_comm_t* comm, const void* input,
                                            void* output, size_t count, gloo_lite_datatype_t type,
                                            void* stream, const gloo_lite_options_t* options,
                                            gloo_lite_work_t** work);

/* Point-to-point on device memory: `bytes` bytes to or from `peer`, with the host point-to-point
 * tags (0 <= tag < 2^63). A send matches the receive of the same (peer, tag) in order; both run
 * in the communicator's call order, so a rank that sends and receives a message larger than the
 * transport's eager size (64 KiB over TCP) to a peer that does the same must order the two
 * opposite to its peer (lower rank sends first), or the two sends wait for each other. A
 * receive of another size than the send fails on both ranks (GLOO_LITE_ERR_MISMATCH) when the
 * sizes differ within the last staging slot; see docs/cuda.md. */
gloo_lite_result_t gloo_lite_cuda_send(gloo_lite_cuda_comm_t* comm, int peer, const void* data,
                                       size_t bytes, uint64_t tag, void* stream);
gloo_lite_result_t gloo_lite_cuda_isend(gloo_lite_cuda_comm_t* comm, int peer, const void* data,
                                        size_t bytes, uint64_t tag, void* stream,
                                        gloo_lite_work_t** work);
gloo_lite_result_t gloo_lite_cuda_recv(gloo_lite_cuda_comm_t* comm, int peer, void* data,
                                       size_t bytes, uint64_t tag, void* stream);
gloo_lite_result_t gloo_lite_cuda_irecv(gloo_lite_cuda_comm_t* comm, int peer, void* data,
                                        size_t bytes, uint64_t tag, void* stream,
                                        gloo_lite_work_t** work);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GLOO_LITE_GLOO_LITE_H_ */
