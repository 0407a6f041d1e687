// Each kind of C++ error becomes its own result code at the C ABI: the error of each kind
// (gloo_lite::error_sample, its class) and the library's own subclasses through the ABI's real
// classification and failure record, against the table below (written here from
// gloo_lite/gloo_lite.h, not read from the binding).
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bindings/c/c_api_support.h"
#include "cuda/device_layer.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/fingerprint.h"
#include "gloo_lite/gloo_lite.h"
#include "gloo_lite/shm/host_segment.h"

namespace gloo_lite {
namespace {

const std::vector<std::pair<std::string, gloo_lite_result_t>> kExpected = {
    {"other", GLOO_LITE_ERR_INTERNAL},
    {"timeout", GLOO_LITE_ERR_TIMEOUT},
    {"connection", GLOO_LITE_ERR_CONNECTION},
    {"mismatch", GLOO_LITE_ERR_MISMATCH},
    {"invalid_argument", GLOO_LITE_ERR_INVALID_ARGUMENT},
    {"store", GLOO_LITE_ERR_STORE},
    {"unavailable", GLOO_LITE_ERR_UNAVAILABLE},
};

gloo_lite_result_t code_of(const std::exception_ptr& error, std::string* message) {
  return c_api::classify(error, message);
}

TEST(CApiErrorKinds, EveryKindHasAnExpectation) {
  std::vector<std::string> names;
  for (ErrorKind kind : kErrorKinds) names.push_back(name_of(kind));
  ASSERT_EQ(names.size(), kExpected.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], kExpected[i].first);
}

TEST(CApiErrorKinds, EachKindHasItsResultCode) {
  for (const auto& [name, code] : kExpected) {
    std::string message;
    EXPECT_EQ(code_of(error_sample(name), &message), code) << name;
    EXPECT_EQ(message, "sample " + name);
  }
}

// The subclasses thrown in the library keep their base's kind.
TEST(CApiErrorKinds, SubclassesHaveTheirBasesCode) {
  std::string message;
  EXPECT_EQ(code_of(std::make_exception_ptr(cuda::Unavailable("no GPU")), &message),
            GLOO_LITE_ERR_UNAVAILABLE);
  EXPECT_EQ(code_of(std::make_exception_ptr(AgreedMismatch("counts differ")), &message),
            GLOO_LITE_ERR_MISMATCH);
  EXPECT_EQ(code_of(std::make_exception_ptr(SegmentUnavailable("no segment")), &message),
            GLOO_LITE_ERR_INTERNAL);
  EXPECT_EQ(message, "no segment");
}

TEST(CApiErrorKinds, OtherExceptionsAreInternal) {
  std::string message;
  EXPECT_EQ(code_of(std::make_exception_ptr(std::runtime_error("boom")), &message),
            GLOO_LITE_ERR_INTERNAL);
  EXPECT_EQ(message, "boom");
  EXPECT_EQ(code_of(std::make_exception_ptr(std::bad_alloc()), &message), GLOO_LITE_ERR_INTERNAL);
  EXPECT_EQ(message, "out of memory");
  EXPECT_EQ(code_of(std::make_exception_ptr(42), &message), GLOO_LITE_ERR_INTERNAL);
  EXPECT_NE(message.find("not a std::exception"), std::string::npos) << message;
}

TEST(CApiErrorKinds, AFailureRecordsItsCodeAndNamesTheFunction) {
  for (const auto& [name, code] : kExpected) {
    const gloo_lite_result_t result =
        c_api::guarded("gloo_lite_test", [&] { std::rethrow_exception(error_sample(name)); });
    EXPECT_EQ(result, code) << name;
    EXPECT_EQ(std::string(gloo_lite_last_error()), "gloo_lite_test: sample " + name);
  }
}

}  // namespace
}  // namespace gloo_lite
