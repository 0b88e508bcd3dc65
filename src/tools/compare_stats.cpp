// The statistics of one tensor against another: the one place where onnxkit
// decides whether two sets of numbers agree (compare, debug reduce and
// simplify's checks all come here).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "tools/compare.h"

namespace onnxkit::tools {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string index_of(const runtime::Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return runtime::shape_to_string(index);
}

// numpy's default (linear) quantile of `values[from, end)`, which it
// reorders; elements before `from` must be no larger than those after (what
// an earlier call for a lower quantile leaves), so a second quantile only
// partitions the part above the first.
double quantile_of(std::vector<float>& values, double q, size_t from = 0) {
  if (values.empty()) return 0;
  const double position = q * static_cast<double>(values.size() - 1);
  const auto lo = std::max(from, static_cast<size_t>(std::floor(position)));
  auto begin = values.begin() + static_cast<std::ptrdiff_t>(from);
  std::nth_element(begin, values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
  const double low = values[lo];
  if (lo + 1 >= values.size() || position <= static_cast<double>(lo)) return low;
  const double high = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(lo) + 1, values.end());
  return low + (high - low) * (position - static_cast<double>(lo));
}

// The median and quantile `q` of `values`, the lower first so the other partitions what is left.
std::pair<double, double> median_and_quantile(std::vector<float>& values, double q) {
  if (values.empty()) return {0, 0};
  const auto at = [&](double p) { return static_cast<size_t>(std::floor(p * static_cast<double>(values.size() - 1))); };
  if (q >= 0.5) {
    const double median = quantile_of(values, 0.5);
    return {median, quantile_of(values, q, at(0.5))};
  }
  const double quantile = quantile_of(values, q);
  return {quantile_of(values, 0.5, at(q)), quantile};
}

// The statistic the verdict uses, of the errors and of |expected|.
double statistic(ErrorStat stat, const TensorStats& s, std::vector<float>& magnitudes, double quantile, bool errors) {
  switch (stat) {
    case ErrorStat::max: return errors ? s.max_abs : *std::max_element(magnitudes.begin(), magnitudes.end());
    case ErrorStat::mean: {
      if (errors) return s.mean_abs;
      double sum = 0;
      for (float m : magnitudes) sum += m;
      return sum / static_cast<double>(magnitudes.size());
    }
    case ErrorStat::median: return errors ? s.median_abs : quantile_of(magnitudes, 0.5);
    case ErrorStat::quantile: return errors ? s.quantile_abs : quantile_of(magnitudes, quantile);
    case ErrorStat::elemwise: break;
  }
  return 0;
}

TensorStats exact_stats(const runtime::Tensor& expected, const runtime::Tensor& actual) {
  TensorStats s;
  s.elements = expected.numel();
  for (int64_t i = 0; i < s.elements; ++i) {
    bool same = false;
    if (expected.dtype() == runtime::DataType::string) same = expected.data<std::string>()[i] == actual.data<std::string>()[i];
    else if (expected.dtype() == runtime::DataType::boolean) same = expected.data<bool>()[i] == actual.data<bool>()[i];
    else {
      const size_t width = runtime::element_size(expected.dtype());
      same = std::memcmp(static_cast<const char*>(expected.raw()) + i * width, static_cast<const char*>(actual.raw()) + i * width,
                         width) == 0;
    }
    if (same) continue;
    if (s.mismatches++ == 0) s.mismatch = fmt::format("at {}: values differ", index_of(expected.shape(), i));
  }
  s.passed = s.mismatches == 0;
  if (!s.passed) {
    s.max_abs = s.required_atol = s.required_rtol = kInf;
    s.snr_db = -kInf;
    s.cosine = 0;
  }
  return s;
}

// A floating-point tensor in float64, so that two floating types compare (a
// float16 model against its float32 original).
runtime::Tensor widened(const runtime::Tensor& t) {
  runtime::Tensor wide(runtime::DataType::float64, t.shape());
  double* out = wide.mutable_data<double>();
  (void)runtime::dispatch_float(t.dtype(), [&]<class T>() -> Status {
    const T* in = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<double>(in[i]);
    return {};
  });
  return wide;
}

}  // namespace

Result<ErrorStat> parse_error_stat(const std::string& text) {
  for (ErrorStat s : {ErrorStat::elemwise, ErrorStat::max, ErrorStat::mean, ErrorStat::median, ErrorStat::quantile})
    if (text == to_string(s)) return s;
  return make_error("--stat '{}': expected elemwise, max, mean, median or quantile", text);
}

const char* to_string(ErrorStat stat) {
  switch (stat) {
    case ErrorStat::elemwise: return "elemwise";
    case ErrorStat::max: return "max";
    case ErrorStat::mean: return "mean";
    case ErrorStat::median: return "median";
    case ErrorStat::quantile: return "quantile";
  }
  return "?";
}

TensorStats compare_tensor_stats(const runtime::Tensor& expected, const runtime::Tensor& actual, const Tolerance& tolerance) {
  TensorStats s;
  if (expected.dtype() != actual.dtype() && expected.shape() == actual.shape() && runtime::is_floating(expected.dtype()) &&
      runtime::is_floating(actual.dtype()))
    return compare_tensor_stats(widened(expected), widened(actual), tolerance);
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    s.passed = s.comparable = false;
    s.elements = expected.numel();
    s.mismatch = fmt::format("{}{} vs {}{}", runtime::to_string(expected.dtype()), runtime::shape_to_string(expected.shape()),
                             runtime::to_string(actual.dtype()), runtime::shape_to_string(actual.shape()));
    s.max_abs = s.max_rel = s.required_atol = s.required_rtol = kInf;
    s.snr_db = -kInf;
    s.cosine = 0;
    return s;
  }
  const runtime::DataType type = expected.dtype();
  const bool floating = runtime::is_floating(type);
  if (!floating && !runtime::is_integer(type)) return exact_stats(expected, actual);

  const int64_t n = expected.numel();
  s.elements = n;
  const double rtol = floating ? tolerance.rtol : 0, atol = floating ? tolerance.atol : 0;
  const bool aggregate = floating && tolerance.stat != ErrorStat::elemwise;
  std::vector<float> errors(static_cast<size_t>(n));
  std::vector<float> magnitudes(aggregate ? static_cast<size_t>(n) : 0);
  double sum_abs = 0, expected2 = 0, actual2 = 0, dot = 0, error2 = 0;
  bool nonfinite_mismatch = false;
  (void)runtime::dispatch_numeric(type, [&]<class T>() -> Status {
    const T* e = expected.data<T>();
    const T* a = actual.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(e[i]), y = static_cast<double>(a[i]);
      if (aggregate) magnitudes[static_cast<size_t>(i)] = static_cast<float>(std::fabs(x));
      double d = 0;
      bool ok = true;
      if (std::isfinite(x) && std::isfinite(y)) {
        d = std::fabs(x - y);
        const double m = std::fabs(x);
        ok = d <= atol + rtol * m;
        s.max_rel = std::max(s.max_rel, d == 0 ? 0 : m == 0 ? kInf : d / m);
        s.required_atol = std::max(s.required_atol, d - rtol * m);
        if (d > atol) s.required_rtol = std::max(s.required_rtol, m == 0 ? kInf : (d - atol) / m);
        expected2 += x * x;
        actual2 += y * y;
        dot += x * y;
        error2 += d * d;
      } else {
        s.nan_expected += std::isnan(x);
        s.inf_expected += std::isinf(x);
        s.nan_actual += std::isnan(y);
        s.inf_actual += std::isinf(y);
        ok = (std::isnan(x) && std::isnan(y)) || x == y;
        if (!ok) {
          nonfinite_mismatch = true;
          d = kInf;
          s.max_rel = s.required_atol = s.required_rtol = kInf;
        }
      }
      errors[static_cast<size_t>(i)] = static_cast<float>(d);
      s.max_abs = std::max(s.max_abs, d);
      sum_abs += d;
      if (!ok && s.mismatches++ == 0)
        s.mismatch = fmt::format("at {}: expected {:g}, got {:g}", index_of(expected.shape(), i), x, y);
    }
    return {};
  });
  if (n > 0) {
    s.mean_abs = sum_abs / static_cast<double>(n);
    // Equal tensors (most, when nothing is wrong) need no partitioning.
    if (s.max_abs > 0) std::tie(s.median_abs, s.quantile_abs) = median_and_quantile(errors, tolerance.quantile);
  }
  s.cosine = expected2 == 0 && actual2 == 0 ? 1 : expected2 == 0 || actual2 == 0 ? 0 : dot / std::sqrt(expected2 * actual2);
  s.snr_db = error2 == 0 ? kInf : expected2 == 0 ? -kInf : 10 * std::log10(expected2 / error2);
  if (nonfinite_mismatch) s.snr_db = -kInf;
  if (!aggregate) {
    s.passed = s.mismatches == 0;
    return s;
  }
  // Non-finite mismatches fail whatever the statistic.
  const bool finite_ok = !nonfinite_mismatch;
  const double err = statistic(tolerance.stat, s, magnitudes, tolerance.quantile, true);
  const double scale = n > 0 ? statistic(tolerance.stat, s, magnitudes, tolerance.quantile, false) : 0;
  s.passed = finite_ok && err <= atol + rtol * scale;
  if (!s.passed && finite_ok)
    s.mismatch = fmt::format("{} abs error {:g} > {:g} + {:g} * {:g}", to_string(tolerance.stat), err, atol, rtol, scale);
  return s;
}

TensorStats compare_value_stats(const runtime::Datum& expected, const runtime::Datum& actual, const Tolerance& tolerance) {
  auto unlike = [&] {
    TensorStats s;
    s.passed = s.comparable = false;
    s.mismatch = fmt::format("{} vs {}", expected.describe(), actual.describe());
    s.max_abs = s.max_rel = s.required_atol = s.required_rtol = kInf;
    s.snr_db = -kInf;
    s.cosine = 0;
    return s;
  };
  if (expected.is_tensor() && actual.is_tensor()) return compare_tensor_stats(expected.tensor(), actual.tensor(), tolerance);
  if (expected.is_sequence() && actual.is_sequence()) {
    const auto& a = expected.sequence().items;
    const auto& b = actual.sequence().items;
    if (a.size() != b.size()) return unlike();
    TensorStats worst;
    for (size_t i = 0; i < a.size(); ++i) {
      TensorStats s = compare_tensor_stats(a[i], b[i], tolerance);
      if (!s.passed) s.mismatch = fmt::format("element {}: {}", i, s.mismatch);
      if (i == 0 || (worst.passed && !s.passed) || (worst.passed == s.passed && s.snr_db < worst.snr_db)) worst = s;
    }
    return worst;
  }
  if (expected.is_optional() && actual.is_optional()) {
    const auto& a = expected.optional().value;
    const auto& b = actual.optional().value;
    if (a == nullptr && b == nullptr) return {};
    if (a == nullptr || b == nullptr) return unlike();
    return compare_value_stats(*a, *b, tolerance);
  }
  if (expected.empty() && actual.empty()) return {};
  return unlike();
}

Difference compare_values(const runtime::Datum& expected, const runtime::Datum& actual, double rtol, double atol) {
  Tolerance tolerance;
  tolerance.rtol = rtol;
  tolerance.atol = atol;
  TensorStats s = compare_value_stats(expected, actual, tolerance);
  return {s.passed, s.max_abs, s.mismatch};
}

}  // namespace onnxkit::tools
