#include "gloo_lite/types.h"

#include <cctype>
#include <string>

#include "gloo_lite/base/error.h"
#include "gloo_lite/float16_bits.h"

namespace gloo_lite {
namespace {

struct TypeInfo {
  DataType type;
  const char* name;  // canonical, what type_name prints
  size_t size;
  const char* aliases[3];  // nccl-tests' and common short forms; nullptr-terminated
};

constexpr TypeInfo kTypes[] = {
    {DataType::kInt8, "int8", 1, {"char", nullptr}},
    {DataType::kUint8, "uint8", 1, {nullptr}},
    {DataType::kInt32, "int32", 4, {"int", nullptr}},
    {DataType::kUint32, "uint32", 4, {nullptr}},
    {DataType::kInt64, "int64", 8, {nullptr}},
    {DataType::kUint64, "uint64", 8, {nullptr}},
    {DataType::kFloat16, "float16", 2, {"half", "fp16", nullptr}},
    {DataType::kBFloat16, "bfloat16", 2, {"bf16", nullptr}},
    {DataType::kFloat32, "float32", 4, {"float", "fp32", nullptr}},
    {DataType::kFloat64, "float64", 8, {"double", "fp64", nullptr}},
};

// Indexed by ReduceOp.
constexpr const char* kOpNames[] = {"sum",    "prod", "min", "max", "avg",
                                    "custom", "band", "bor", "bxor"};
constexpr size_t kOpCount = sizeof(kOpNames) / sizeof(kOpNames[0]);
static_assert(kOpCount == static_cast<size_t>(ReduceOp::kBxor) + 1, "a name for every ReduceOp");

const TypeInfo& info(DataType type) {
  for (const TypeInfo& entry : kTypes) {
    if (entry.type == type) return entry;
  }
  throw InvalidArgument("invalid DataType value " + std::to_string(static_cast<int>(type)));
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

size_t element_size(DataType type) { return info(type).size; }

const char* type_name(DataType type) { return info(type).name; }

const char* op_name(ReduceOp op) {
  const auto index = static_cast<size_t>(op);
  if (index >= kOpCount) {
    throw InvalidArgument("invalid ReduceOp value " + std::to_string(index));
  }
  return kOpNames[index];
}

DataType parse_type(const std::string& name) {
  const std::string key = lowercase(name);
  std::string accepted;
  for (const TypeInfo& entry : kTypes) {
    if (key == entry.name) return entry.type;
    accepted += accepted.empty() ? "" : ", ";
    accepted += entry.name;
    for (const char* const* alias = entry.aliases; *alias != nullptr; ++alias) {
      if (key == *alias) return entry.type;
      accepted += std::string("/") + *alias;
    }
  }
  throw InvalidArgument("unknown data type '" + name + "'; accepted: " + accepted);
}

ReduceOp parse_op(const std::string& name) {
  const std::string key = lowercase(name);
  std::string accepted;
  for (size_t i = 0; i < kOpCount; ++i) {
    if (key == kOpNames[i]) return static_cast<ReduceOp>(i);
    accepted += accepted.empty() ? "" : ", ";
    accepted += kOpNames[i];
  }
  throw InvalidArgument("unknown reduction op '" + name + "'; accepted: " + accepted);
}

uint16_t float_to_half(float value) { return detail::float_to_half_bits(value); }

float half_to_float(uint16_t bits) { return detail::half_bits_to_float(bits); }

uint16_t float_to_bfloat16(float value) { return detail::float_to_bfloat16_bits(value); }

float bfloat16_to_float(uint16_t bits) { return detail::bfloat16_bits_to_float(bits); }

}  // namespace gloo_lite
