#include "tools/compare.h"

#include <fmt/format.h>

#include <cmath>

namespace onnxkit::tools {

namespace {

std::string index_of(const runtime::Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return runtime::shape_to_string(index);
}

Difference compare_tensors(const runtime::Tensor& expected, const runtime::Tensor& actual, double rtol, double atol) {
  Difference diff;
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    diff.close = false;
    diff.detail = fmt::format("{}{} vs {}{}", runtime::to_string(expected.dtype()), runtime::shape_to_string(expected.shape()),
                              runtime::to_string(actual.dtype()), runtime::shape_to_string(actual.shape()));
    return diff;
  }
  const int64_t n = expected.numel();
  if (expected.dtype() == runtime::DataType::string || expected.dtype() == runtime::DataType::boolean) {
    for (int64_t i = 0; i < n && diff.close; ++i) {
      bool same = expected.dtype() == runtime::DataType::string
                      ? expected.data<std::string>()[i] == actual.data<std::string>()[i]
                      : expected.data<bool>()[i] == actual.data<bool>()[i];
      if (!same) diff = {false, 0, fmt::format("at {}: values differ", index_of(expected.shape(), i))};
    }
    return diff;
  }
  const bool exact = !runtime::is_floating(expected.dtype());
  Status status = runtime::dispatch_numeric(expected.dtype(), [&]<class T>() -> Status {
    const T* e = expected.data<T>();
    const T* a = actual.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      double x = static_cast<double>(e[i]), y = static_cast<double>(a[i]);
      if (std::isnan(x) && std::isnan(y)) continue;
      double d = std::fabs(x - y);
      if (std::isnan(d)) d = INFINITY;
      if (x == y) d = 0;  // equal infinities
      diff.max_abs_diff = std::max(diff.max_abs_diff, d);
      bool ok = exact ? d == 0 : d <= atol + rtol * std::fabs(x);
      if (!ok && diff.close) {
        diff.close = false;
        diff.detail = fmt::format("at {}: expected {}, got {}", index_of(expected.shape(), i), x, y);
      }
    }
    return {};
  });
  if (!status.ok()) diff = {false, 0, status.error().message()};
  return diff;
}

}  // namespace

Difference compare_values(const runtime::Value& expected, const runtime::Value& actual, double rtol, double atol) {
  if (expected.is_tensor() && actual.is_tensor()) return compare_tensors(expected.tensor(), actual.tensor(), rtol, atol);
  if (expected.is_sequence() && actual.is_sequence()) {
    const auto& a = expected.sequence().items;
    const auto& b = actual.sequence().items;
    if (a.size() != b.size()) return {false, 0, fmt::format("sequence of {} vs {}", a.size(), b.size())};
    Difference total;
    for (size_t i = 0; i < a.size(); ++i) {
      Difference d = compare_tensors(a[i], b[i], rtol, atol);
      total.max_abs_diff = std::max(total.max_abs_diff, d.max_abs_diff);
      if (!d.close && total.close) total = {false, total.max_abs_diff, fmt::format("element {}: {}", i, d.detail)};
    }
    return total;
  }
  if (expected.describe() == actual.describe()) return {};
  return {false, 0, fmt::format("{} vs {}", expected.describe(), actual.describe())};
}

}  // namespace onnxkit::tools
