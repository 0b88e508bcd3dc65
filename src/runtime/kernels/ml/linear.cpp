// LinearClassifier and LinearRegressor: scores = X * coefficients^T +
// intercepts, computed in double, then the post transform.

#include <algorithm>

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime::ml {
namespace {

struct Linear {
  std::vector<double> coefficients;  // [targets, C]
  std::vector<double> intercepts;    // [targets] or empty
  PostTransform post = PostTransform::none;
};

// scores [N, targets] of X's rows; targets from the coefficient count.
Result<std::vector<double>> linear_scores(const Linear& m, const Tensor& x, int64_t targets, Rows& rows) {
  ONNXKIT_ASSIGN(rows, rows_of(x));
  if (static_cast<int64_t>(m.coefficients.size()) != targets * rows.c)
    return make_error("coefficients has {} entries, not {} targets x {} features of input X", m.coefficients.size(), targets,
                      rows.c);
  ONNXKIT_ASSIGN(std::vector<double> xs, features_as_doubles(x));
  std::vector<double> scores(static_cast<size_t>(rows.n * targets));
  for (int64_t i = 0; i < rows.n; ++i)
    for (int64_t t = 0; t < targets; ++t) {
      double s = m.intercepts.empty() ? 0.0 : m.intercepts[t];
      const double* w = m.coefficients.data() + t * rows.c;
      const double* xi = xs.data() + i * rows.c;
      for (int64_t j = 0; j < rows.c; ++j) s += w[j] * xi[j];
      scores[i * targets + t] = s;
    }
  return scores;
}

Result<Linear> read_linear(const KernelInfo& info) {
  Linear m;
  ONNXKIT_ASSIGN(m.coefficients, attr_doubles(info, "coefficients"));
  ONNXKIT_ASSIGN(m.intercepts, attr_doubles(info, "intercepts"));
  ONNXKIT_ASSIGN(m.post, parse_post_transform(info));
  if (m.coefficients.empty()) return make_error("attribute coefficients is missing");
  return m;
}

Result<ComputeFn> build_regressor(const KernelInfo& info) {
  ONNXKIT_ASSIGN(Linear m, read_linear(info));
  const int64_t targets = info.attr_int("targets", 1);
  if (targets < 1 || (!m.intercepts.empty() && static_cast<int64_t>(m.intercepts.size()) != targets))
    return make_error("targets is {} with {} intercepts", targets, m.intercepts.size());
  return ComputeFn([m, targets](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    Rows rows;
    ONNXKIT_ASSIGN(std::vector<double> scores, linear_scores(m, *x, targets, rows));
    float* y = ctx.output(0, DataType::float32, {rows.n, targets}).mutable_data<float>();
    for (int64_t i = 0; i < rows.n; ++i) {
      apply_post_transform(m.post, scores.data() + i * targets, targets);
      for (int64_t t = 0; t < targets; ++t) y[i * targets + t] = static_cast<float>(scores[i * targets + t]);
    }
    return {};
  });
}

Result<ComputeFn> build_classifier(const KernelInfo& info) {
  ONNXKIT_ASSIGN(Linear m, read_linear(info));
  std::vector<int64_t> ints = info.attr_ints("classlabels_ints");
  std::vector<std::string> strings = info.attr_strings("classlabels_strings");
  if (ints.empty() == strings.empty()) return make_error("exactly one of classlabels_ints and classlabels_strings must be given");
  const int64_t labels = static_cast<int64_t>(strings.empty() ? ints.size() : strings.size());
  // One score column and two labels: the score is the positive class's,
  // and the negative one's is derived (as ONNX Runtime does).
  const int64_t targets = m.intercepts.empty() ? labels : static_cast<int64_t>(m.intercepts.size());
  if (targets != 1 && targets != labels) return make_error("{} intercepts for {} class labels", targets, labels);
  return ComputeFn([m, ints, strings, targets, labels](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    Rows rows;
    ONNXKIT_ASSIGN(std::vector<double> scores, linear_scores(m, *x, targets, rows));
    std::vector<int64_t> label(static_cast<size_t>(rows.n));
    for (int64_t i = 0; i < rows.n; ++i) {
      const double* s = scores.data() + i * targets;
      label[i] = targets == 1 ? (s[0] > 0 ? 1 : 0) : std::max_element(s, s + targets) - s;
    }
    // One score column and other than two labels: 1 and 0 are the labels.
    const bool literal = targets == 1 && labels != 2;
    if (strings.empty()) {
      int64_t* y = ctx.output(0, DataType::int64, {rows.n}).mutable_data<int64_t>();
      for (int64_t i = 0; i < rows.n; ++i) y[i] = literal ? label[i] : ints[label[i]];
    } else {
      std::string* y = ctx.output(0, DataType::string, {rows.n}).mutable_data<std::string>();
      for (int64_t i = 0; i < rows.n; ++i) y[i] = literal ? std::to_string(label[i]) : strings[label[i]];
    }
    if (ctx.num_outputs() < 2) return {};
    const bool second = targets == 1 && labels == 2;
    const int64_t width = second ? 2 : targets;
    float* z = ctx.output(1, DataType::float32, {rows.n, width}).mutable_data<float>();
    for (int64_t i = 0; i < rows.n; ++i) {
      double* s = scores.data() + i * targets;
      double row[2];
      if (second) {
        if (m.post == PostTransform::logistic) {
          row[1] = logistic(s[0]);
          row[0] = 1.0 - row[1];
        } else if (m.post == PostTransform::probit) {
          row[1] = probit(s[0]);
          row[0] = 1.0 - row[1];
        } else {
          row[1] = s[0];
          row[0] = 1.0 - s[0];
        }
        z[i * 2] = static_cast<float>(row[0]);
        z[i * 2 + 1] = static_cast<float>(row[1]);
        continue;
      }
      apply_post_transform(m.post, s, targets);
      for (int64_t t = 0; t < targets; ++t) z[i * targets + t] = static_cast<float>(s[t]);
    }
    return {};
  });
}

}  // namespace

void register_linear(KernelRegistry& r) {
  r.add(std::string(kDomain), "LinearClassifier", 1, kLatestOpset, make_kernel(build_classifier));
  r.add(std::string(kDomain), "LinearRegressor", 1, kLatestOpset, make_kernel(build_regressor));
}

}  // namespace onnxkit::runtime::ml
