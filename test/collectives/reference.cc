#include "test/collectives/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "test/collectives/formats.h"

namespace gloo_lite::test {
namespace {

// ---- element types: storage, value as double, epsilon ----

template <typename S>
struct IntegerType {
  using Storage = S;
  static constexpr bool kFloat = false;
};

struct HalfType {
  using Storage = uint16_t;
  static constexpr bool kFloat = true;
  static constexpr double kEpsilon = 0x1p-10;
  static constexpr double kTiny = 0x1p-24;  // smallest subnormal
  static double value(uint16_t bits) { return half_to_double(bits); }
  static uint16_t make(double value) { return float_to_half_bits(static_cast<float>(value)); }
};

struct BFloat16Type {
  using Storage = uint16_t;
  static constexpr bool kFloat = true;
  static constexpr double kEpsilon = 0x1p-7;
  static constexpr double kTiny = 0x1p-133;
  static double value(uint16_t bits) { return bfloat16_to_double(bits); }
  static uint16_t make(double value) { return float_to_bfloat16_bits(static_cast<float>(value)); }
};

struct Float32Type {
  using Storage = float;
  static constexpr bool kFloat = true;
  static constexpr double kEpsilon = 0x1p-23;
  static constexpr double kTiny = 0x1p-149;
  static double value(float bits) { return bits; }
  static float make(double value) { return static_cast<float>(value); }
};

struct Float64Type {
  using Storage = double;
  static constexpr bool kFloat = true;
  static constexpr double kEpsilon = 0x1p-52;
  static constexpr double kTiny = std::numeric_limits<double>::denorm_min();
  static double value(double bits) { return bits; }
  static double make(double value) { return value; }
};

template <typename F>
void dispatch(DataType type, F&& f) {
  switch (type) {
    case DataType::kInt8:
      return f(IntegerType<int8_t>{});
    case DataType::kUint8:
      return f(IntegerType<uint8_t>{});
    case DataType::kInt32:
      return f(IntegerType<int32_t>{});
    case DataType::kUint32:
      return f(IntegerType<uint32_t>{});
    case DataType::kInt64:
      return f(IntegerType<int64_t>{});
    case DataType::kUint64:
      return f(IntegerType<uint64_t>{});
    case DataType::kFloat16:
      return f(HalfType{});
    case DataType::kBFloat16:
      return f(BFloat16Type{});
    case DataType::kFloat32:
      return f(Float32Type{});
    case DataType::kFloat64:
      return f(Float64Type{});
  }
}

template <typename S>
S load(const void* base, size_t i) {
  S value;
  std::memcpy(&value, static_cast<const uint8_t*>(base) + i * sizeof(S), sizeof(S));
  return value;
}

template <typename S>
void store(void* base, size_t i, S value) {
  std::memcpy(static_cast<uint8_t*>(base) + i * sizeof(S), &value, sizeof(S));
}

// Integer arithmetic with two's-complement wraparound, whatever the signedness.
template <typename S>
S wrap(uint64_t bits) {
  using U = std::make_unsigned_t<S>;
  U narrow = static_cast<U>(bits);
  S value;
  std::memcpy(&value, &narrow, sizeof(S));
  return value;
}
template <typename S>
uint64_t widen(S value) {
  return static_cast<uint64_t>(static_cast<std::make_unsigned_t<S>>(value));
}
template <typename S>
S wrap_add(S a, S b) {
  return wrap<S>(widen(a) + widen(b));
}
template <typename S>
S wrap_mul(S a, S b) {
  return wrap<S>(widen(a) * widen(b));
}

// ---- inputs ----

uint64_t draw(const Inputs& inputs, int rank, size_t index) {
  return mix64(inputs.seed ^ mix64((uint64_t(rank) << 48) ^ index ^ 0x5DEECE66Dull));
}

double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1p-52 - 1.0; }  // [-1, 1)

template <typename S>
S integer_input(const Inputs& inputs, int rank, size_t index) {
  uint64_t h = draw(inputs, rank, index);
  constexpr int kBits = 8 * sizeof(S);
  switch (inputs.pattern) {
    case Pattern::kAdditive:
      if (std::is_signed_v<S>) {
        uint64_t half = uint64_t{1} << (kBits - 6);
        return wrap<S>(h % (2 * half) - half);
      }
      return wrap<S>(h % (uint64_t{1} << (kBits - 5)));
    case Pattern::kProduct: {
      int64_t value = std::is_signed_v<S> && (h & 1) ? -1 : 1;
      size_t ranks = static_cast<size_t>(inputs.ranks);
      if (static_cast<size_t>(rank) == index % ranks) value *= 3;
      if (static_cast<size_t>(rank) == (index / 3 + 1) % ranks) value *= 2;
      return wrap<S>(static_cast<uint64_t>(value));
    }
    case Pattern::kAndBits:
    case Pattern::kOrBits: {
      // k independent words ANDed, 2^k >= P: each bit is set with probability 2^-k, about 1/P.
      uint64_t sparse = h;
      for (int k = 2; k < inputs.ranks; k *= 2) sparse &= mix64(h ^ (uint64_t(k) << 56));
      return wrap<S>(inputs.pattern == Pattern::kOrBits ? sparse : ~sparse);
    }
    case Pattern::kOrdered:
    case Pattern::kMove:
      break;
  }
  return wrap<S>(h);
}

double float_input(const Inputs& inputs, int rank, size_t index) {
  uint64_t h = draw(inputs, rank, index);
  switch (inputs.pattern) {
    case Pattern::kAdditive:
      return unit(h);
    case Pattern::kProduct:
      return ((h & 1) ? -1.0 : 1.0) * (1.0 + unit(mix64(h)) / 8);
    case Pattern::kOrdered:
    case Pattern::kMove:
    case Pattern::kAndBits:  // bitwise ops: integer types only
    case Pattern::kOrBits:
      break;
  }
  return unit(h) * 1000;
}

template <typename T>
typename T::Storage input(const Inputs& inputs, int rank, size_t index) {
  if constexpr (T::kFloat) {
    return T::make(float_input(inputs, rank, index));
  } else {
    return integer_input<typename T::Storage>(inputs, rank, index);
  }
}

// ---- reporting ----

template <typename T>
std::string show(typename T::Storage value) {
  char text[96];
  if constexpr (T::kFloat) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(value));
    std::snprintf(text, sizeof(text), "%.10g (0x%llx)", T::value(value),
                  static_cast<unsigned long long>(bits));
  } else if constexpr (std::is_signed_v<typename T::Storage>) {
    std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(text, sizeof(text), "%llu", static_cast<unsigned long long>(value));
  }
  return text;
}

// Collects the first few wrong elements of one check into one problem line.
class Report {
 public:
  Report(const std::string& what, size_t count, Problems& problems)
      : what_(what), count_(count), problems_(problems) {}
  ~Report() {
    if (wrong_ == 0) return;
    problems_.push_back(what_ + ": " + std::to_string(wrong_) + " of " + std::to_string(count_) +
                        " elements wrong" + details_);
  }
  void wrong(size_t index, const std::string& expected, const std::string& got) {
    if (++wrong_ <= 4) {
      details_ += "; [" + std::to_string(index) + "] expected " + expected + ", got " + got;
    }
  }

 private:
  std::string what_;
  size_t count_;
  Problems& problems_;
  size_t wrong_ = 0;
  std::string details_;
};

template <typename T>
void integer_reduction(const Inputs& inputs, ReduceOp op, size_t first, size_t count,
                       const void* got, Report& report) {
  using S = typename T::Storage;
  for (size_t i = 0; i < count; ++i) {
    S acc = input<T>(inputs, 0, first + i);
    for (int r = 1; r < inputs.ranks; ++r) {
      S x = input<T>(inputs, r, first + i);
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAvg:
          acc = wrap_add(acc, x);
          break;
        case ReduceOp::kProd:
          acc = wrap_mul(acc, x);
          break;
        case ReduceOp::kMin:
          acc = x < acc ? x : acc;
          break;
        case ReduceOp::kMax:
          acc = x > acc ? x : acc;
          break;
        case ReduceOp::kCustom:
          acc = wrap_add(wrap_add(acc, x), S{1});
          break;
        case ReduceOp::kBand:
          acc = wrap<S>(widen(acc) & widen(x));
          break;
        case ReduceOp::kBor:
          acc = wrap<S>(widen(acc) | widen(x));
          break;
        case ReduceOp::kBxor:
          acc = wrap<S>(widen(acc) ^ widen(x));
          break;
      }
    }
    if (op == ReduceOp::kAvg) {
      if constexpr (std::is_signed_v<S>) {
        acc = static_cast<S>(static_cast<int64_t>(acc) / inputs.ranks);
      } else {
        acc = static_cast<S>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(inputs.ranks));
      }
    }
    S value = load<S>(got, i);
    if (value != acc) report.wrong(first + i, show<T>(acc), show<T>(value));
  }
}

template <typename T>
void float_reduction(const Inputs& inputs, ReduceOp op, size_t first, size_t count, const void* got,
                     Report& report) {
  using S = typename T::Storage;
  const double p = inputs.ranks;
  const double slack = (p + 1) * T::kEpsilon;
  for (size_t i = 0; i < count; ++i) {
    double sum = 0, magnitude = 0, product = 1;
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (int r = 0; r < inputs.ranks; ++r) {
      double x = T::value(input<T>(inputs, r, first + i));
      sum += x;
      magnitude += std::fabs(x);
      product *= x;
      low = std::min(low, x);
      high = std::max(high, x);
    }
    double expected = 0, tolerance = 0;
    switch (op) {
      case ReduceOp::kSum:
        expected = sum;
        tolerance = slack * magnitude + (p + 1) * T::kTiny;
        break;
      case ReduceOp::kAvg:
        expected = sum / p;
        tolerance = (slack * magnitude + (p + 1) * T::kTiny) / p +
                    T::kEpsilon * std::fabs(expected) + T::kTiny;
        break;
      case ReduceOp::kProd:
        expected = product;
        tolerance = slack * std::fabs(product) + (p + 1) * T::kTiny;
        break;
      case ReduceOp::kMin:
        expected = low;
        break;
      case ReduceOp::kMax:
        expected = high;
        break;
      case ReduceOp::kCustom:
        expected = sum + (p - 1);
        tolerance = slack * (magnitude + p - 1) + (p + 1) * T::kTiny;
        break;
      case ReduceOp::kBand:
      case ReduceOp::kBor:
      case ReduceOp::kBxor:
        // Not defined on floats: the library refuses the call, and nothing is compared. A
        // result that somehow arrives fails (the NaN expectation matches nothing).
        expected = std::numeric_limits<double>::quiet_NaN();
        break;
    }
    S raw = load<S>(got, i);
    double value = T::value(raw);
    if (!(std::fabs(value - expected) <= tolerance)) {
      char text[96];
      std::snprintf(text, sizeof(text), "%.10g (tolerance %.3g)", expected, tolerance);
      report.wrong(first + i, text, show<T>(raw));
    }
  }
}

template <typename T>
void plus_one(void* inout, const void* in, size_t count) {
  using S = typename T::Storage;
  for (size_t i = 0; i < count; ++i) {
    S a = load<S>(inout, i);
    S b = load<S>(in, i);
    if constexpr (!T::kFloat) {
      store(inout, i, wrap_add(wrap_add(a, b), S{1}));
    } else if constexpr (sizeof(S) == 2) {
      float sum = static_cast<float>(T::value(a)) + static_cast<float>(T::value(b)) + 1.0f;
      store(inout, i, T::make(sum));
    } else {
      store(inout, i, static_cast<S>(a + b + S{1}));
    }
  }
}

}  // namespace

Pattern pattern_for(bool reducing, ReduceOp op) {
  if (!reducing) return Pattern::kMove;
  switch (op) {
    case ReduceOp::kProd:
      return Pattern::kProduct;
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kBxor:
      return Pattern::kOrdered;
    case ReduceOp::kBand:
      return Pattern::kAndBits;
    case ReduceOp::kBor:
      return Pattern::kOrBits;
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
    case ReduceOp::kCustom:
      break;
  }
  return Pattern::kAdditive;
}

size_t element_bytes(DataType type) {
  size_t bytes = 0;
  dispatch(type, [&](auto t) { bytes = sizeof(typename decltype(t)::Storage); });
  return bytes;
}

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill_inputs(const Inputs& inputs, int rank, size_t first, size_t count, void* out) {
  dispatch(inputs.type, [&](auto t) {
    using T = decltype(t);
    for (size_t i = 0; i < count; ++i) store(out, i, input<T>(inputs, rank, first + i));
  });
}

void check_copy(const Inputs& inputs, int source, size_t first, size_t count, const void* got,
                const std::string& what, Problems& problems) {
  Report report(what, count, problems);
  dispatch(inputs.type, [&](auto t) {
    using T = decltype(t);
    using S = typename T::Storage;
    for (size_t i = 0; i < count; ++i) {
      S expected = input<T>(inputs, source, first + i);
      S value = load<S>(got, i);
      if (std::memcmp(&expected, &value, sizeof(S)) != 0) {
        report.wrong(i,
                     show<T>(expected) + " (rank " + std::to_string(source) + " element " +
                         std::to_string(first + i) + ")",
                     show<T>(value));
      }
    }
  });
}

void check_reduction(const Inputs& inputs, ReduceOp op, size_t first, size_t count, const void* got,
                     const std::string& what, Problems& problems) {
  Report report(what, count, problems);
  dispatch(inputs.type, [&](auto t) {
    using T = decltype(t);
    if constexpr (T::kFloat) {
      float_reduction<T>(inputs, op, first, count, got, report);
    } else {
      integer_reduction<T>(inputs, op, first, count, got, report);
    }
  });
}

ReduceFunction plus_one_function(DataType type) {
  ReduceFunction function;
  dispatch(type, [&](auto t) { function = plus_one<decltype(t)>; });
  return function;
}

}  // namespace gloo_lite::test
