// What the ai.onnx.ml kernels share: post transforms, attributes that come
// as lists or as tensors, the rows of a feature matrix, and the outputs
// of a classifier.

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime::ml {

Result<PostTransform> parse_post_transform(const KernelInfo& info) {
  const std::string name = info.attr_string("post_transform", "NONE");
  if (name == "NONE") return PostTransform::none;
  if (name == "SOFTMAX") return PostTransform::softmax;
  if (name == "LOGISTIC") return PostTransform::logistic;
  if (name == "SOFTMAX_ZERO") return PostTransform::softmax_zero;
  if (name == "PROBIT") return PostTransform::probit;
  return make_error("post_transform '{}' is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT", name);
}

double logistic(double x) {
  // exp of a non-positive number only, so large |x| cannot overflow.
  const double e = std::exp(-std::abs(x));
  return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

double probit(double p) {
  // erfinv by Newton's method on std::erf from a rational first guess
  // (Giles' single-precision one): three steps reach double precision.
  const double y = 2.0 * p - 1.0;
  if (y <= -1.0) return -std::numeric_limits<double>::infinity();
  if (y >= 1.0) return std::numeric_limits<double>::infinity();
  double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    w -= 2.5;
    double q = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                     1.50140941})
      q = c + q * w;
    x = q * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double q = -0.000200214257;
    for (double c :
         {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682})
      q = c + q * w;
    x = q * y;
  }
  const double two_over_sqrt_pi = 2.0 / std::sqrt(M_PI);
  for (int i = 0; i < 3; ++i) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return std::sqrt(2.0) * x;
}

void apply_post_transform(PostTransform t, double* s, int64_t n) {
  switch (t) {
    case PostTransform::none: return;
    case PostTransform::logistic:
      for (int64_t i = 0; i < n; ++i) s[i] = logistic(s[i]);
      return;
    case PostTransform::probit:
      for (int64_t i = 0; i < n; ++i) s[i] = probit(s[i]);
      return;
    case PostTransform::softmax:
    case PostTransform::softmax_zero: {
      // SOFTMAX_ZERO leaves zero scores at zero (a class no tree voted for).
      const bool keep_zero = t == PostTransform::softmax_zero;
      double top = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) top = std::max(top, s[i]);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        s[i] = keep_zero && s[i] == 0.0 ? 0.0 : std::exp(s[i] - top);
        sum += s[i];
      }
      if (sum > 0)
        for (int64_t i = 0; i < n; ++i) s[i] /= sum;
      return;
    }
  }
}

Result<std::vector<double>> attr_doubles(const KernelInfo& info, std::string_view name) {
  const std::string tensor_name = std::string(name) + "_as_tensor";
  ONNXKIT_ASSIGN(std::optional<Tensor> t, info.attr_tensor(tensor_name));
  if (t) {
    if (info.has_attr(name)) return make_error("attributes '{}' and '{}' are both given", name, tensor_name);
    return read_doubles(*t, "attribute " + tensor_name);
  }
  // Straight from the attribute: a forest's lists have millions of entries.
  const ir::Attribute* a = info.node().attribute(name);
  if (a == nullptr) return std::vector<double>();
  return std::vector<double>(a->proto.floats().begin(), a->proto.floats().end());
}

Result<Rows> rows_of(const Tensor& x, std::string_view name) {
  if (x.rank() == 1) return Rows{1, x.dim(0)};
  if (x.rank() == 2) return Rows{x.dim(0), x.dim(1)};
  return make_error("input {} must be [N, C] or [C], got shape {}", name, shape_to_string(x.shape()));
}

Result<std::vector<double>> features_as_doubles(const Tensor& x) {
  std::vector<double> out(static_cast<size_t>(x.numel()));
  Status s = dispatch_numeric(x.dtype(), [&]<class T>() -> Status {
    if constexpr (is_half_v<T>) {
      return make_error("element type {} is not supported here", to_string(x.dtype()));
    } else {
      const T* p = x.data<T>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
      return {};
    }
  });
  if (!s.ok()) return s.error();
  return out;
}

void write_classifier_outputs(KernelContext& ctx, const std::vector<int64_t>& int_labels,
                              const std::vector<std::string>& string_labels, const std::vector<int64_t>& label,
                              const std::vector<double>& scores, int64_t width) {
  const int64_t n = static_cast<int64_t>(label.size());
  if (string_labels.empty()) {
    int64_t* y = ctx.output(0, DataType::int64, {n}).mutable_data<int64_t>();
    for (int64_t i = 0; i < n; ++i) y[i] = int_labels[label[i]];
  } else {
    std::string* y = ctx.output(0, DataType::string, {n}).mutable_data<std::string>();
    for (int64_t i = 0; i < n; ++i) y[i] = string_labels[label[i]];
  }
  if (ctx.num_outputs() > 1) {
    float* z = ctx.output(1, DataType::float32, {n, width}).mutable_data<float>();
    for (size_t i = 0; i < scores.size(); ++i) z[i] = static_cast<float>(scores[i]);
  }
}

}  // namespace onnxkit::runtime::ml
