// gloo_lite/gloo_lite.h must compile as C++ too (extern "C", no C-only constructs), and its
// option initialiser must be valid C++.
#include "gloo_lite/gloo_lite.h"

namespace {
[[maybe_unused]] const gloo_lite_options_t kDefaults = GLOO_LITE_OPTIONS_INIT;
[[maybe_unused]] gloo_lite_result_t (*const kEntry)(
    gloo_lite_context_t*, const void*, void*, size_t, gloo_lite_datatype_t, gloo_lite_op_t,
    const gloo_lite_options_t*) = gloo_lite_allreduce;
}  // namespace
