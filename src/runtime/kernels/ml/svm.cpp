// SVMRegressor and SVMClassifier: kernel machines as libsvm (scikit-learn's
// SVR, SVC, OneClassSVM) leaves them.

#include <algorithm>
#include <cmath>

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime::ml {
namespace {

enum class KernelType { linear, poly, rbf, sigmoid };

struct SvmKernel {
  KernelType type = KernelType::linear;
  double gamma = 0, coef0 = 0, degree = 0;

  double operator()(const double* a, const double* b, int64_t n) const {
    if (type == KernelType::rbf) {
      double d = 0;
      for (int64_t i = 0; i < n; ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
      return std::exp(-gamma * d);
    }
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += a[i] * b[i];
    switch (type) {
      case KernelType::poly: return std::pow(gamma * dot + coef0, degree);
      case KernelType::sigmoid: return std::tanh(gamma * dot + coef0);
      default: return dot;
    }
  }
};

Result<SvmKernel> read_kernel(const KernelInfo& info) {
  SvmKernel k;
  const std::string type = info.attr_string("kernel_type", "LINEAR");
  if (type == "LINEAR") k.type = KernelType::linear;
  else if (type == "POLY") k.type = KernelType::poly;
  else if (type == "RBF") k.type = KernelType::rbf;
  else if (type == "SIGMOID") k.type = KernelType::sigmoid;
  else return make_error("kernel_type '{}' is not one of LINEAR, POLY, RBF, SIGMOID", type);
  std::vector<float> p = info.attr_floats("kernel_params");
  if (!p.empty()) {
    if (p.size() != 3) return make_error("kernel_params has {} entries, not 3 (gamma, coef0, degree)", p.size());
    k.gamma = p[0];
    k.coef0 = p[1];
    k.degree = p[2];
  }
  return k;
}

struct Regressor {
  SvmKernel kernel;
  std::vector<double> coefficients, support_vectors;
  double rho = 0;
  int64_t supports = 0;  // 0: a linear model with coefficients over the features
  bool one_class = false;
  PostTransform post = PostTransform::none;
};

Result<ComputeFn> build_regressor(const KernelInfo& info) {
  auto m = std::make_shared<Regressor>();
  ONNXKIT_ASSIGN(m->kernel, read_kernel(info));
  ONNXKIT_ASSIGN(m->coefficients, attr_doubles(info, "coefficients"));
  ONNXKIT_ASSIGN(m->support_vectors, attr_doubles(info, "support_vectors"));
  std::vector<float> rho = info.attr_floats("rho");
  m->rho = rho.empty() ? 0.0 : rho[0];
  m->supports = info.attr_int("n_supports", 0);
  m->one_class = info.attr_int("one_class", 0) != 0;
  ONNXKIT_ASSIGN(m->post, parse_post_transform(info));
  if (m->supports < 0 || (m->supports > 0 && static_cast<int64_t>(m->coefficients.size()) != m->supports))
    return make_error("{} coefficients for n_supports {}", m->coefficients.size(), m->supports);
  return ComputeFn([m](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(Rows rows, rows_of(*x));
    const int64_t width = m->supports > 0 ? static_cast<int64_t>(m->support_vectors.size()) / m->supports
                                          : static_cast<int64_t>(m->coefficients.size());
    if (width != rows.c || (m->supports > 0 && width * m->supports != static_cast<int64_t>(m->support_vectors.size())))
      return make_error("input X has {} features; the model has {}", rows.c, width);
    ONNXKIT_ASSIGN(std::vector<double> v, features_as_doubles(*x));
    float* y = ctx.output(0, DataType::float32, {rows.n, 1}).mutable_data<float>();
    for (int64_t i = 0; i < rows.n; ++i) {
      const double* xi = v.data() + i * rows.c;
      double s = 0;
      if (m->supports > 0) {
        for (int64_t j = 0; j < m->supports; ++j)
          s += m->coefficients[j] * m->kernel(xi, m->support_vectors.data() + j * rows.c, rows.c);
      } else {
        s = m->kernel(xi, m->coefficients.data(), rows.c);
      }
      s += m->rho;
      if (m->one_class) s = s > 0 ? 1.0 : -1.0;
      apply_post_transform(m->post, &s, 1);
      y[i] = static_cast<float>(s);
    }
    return {};
  });
}

// libsvm's pairwise coupling (Wu, Lin and Weng's second method): class
// probabilities p from the pairwise ones r[i][j] = P(i | i or j).
void multiclass_probability(int64_t k, const std::vector<double>& r, double* p) {
  std::vector<double> q(static_cast<size_t>(k * k)), qp(static_cast<size_t>(k));
  for (int64_t t = 0; t < k; ++t) {
    p[t] = 1.0 / static_cast<double>(k);
    q[t * k + t] = 0;
    for (int64_t j = 0; j < t; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = q[j * k + t];
    }
    for (int64_t j = t + 1; j < k; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  const int64_t max_iter = std::max<int64_t>(100, k);
  const double eps = 0.005 / static_cast<double>(k);
  for (int64_t iter = 0; iter < max_iter; ++iter) {
    double pqp = 0;
    for (int64_t t = 0; t < k; ++t) {
      qp[t] = 0;
      for (int64_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double max_error = 0;
    for (int64_t t = 0; t < k; ++t) max_error = std::max(max_error, std::abs(qp[t] - pqp));
    if (max_error < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const double diff = (-qp[t] + pqp) / q[t * k + t];
      p[t] += diff;
      pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

struct Classifier {
  SvmKernel kernel;
  std::vector<double> coefficients, support_vectors, rho, prob_a, prob_b;
  std::vector<int64_t> vectors_per_class, first_vector;
  int64_t vectors = 0;  // 0: linear (liblinear) mode, coefficients [classes, C]
  std::vector<int64_t> int_labels;
  std::vector<std::string> string_labels;
  int64_t classes = 0;
  bool weights_positive = true;
  PostTransform post = PostTransform::none;
};

Result<ComputeFn> build_classifier(const KernelInfo& info) {
  auto m = std::make_shared<Classifier>();
  ONNXKIT_ASSIGN(m->kernel, read_kernel(info));
  ONNXKIT_ASSIGN(m->coefficients, attr_doubles(info, "coefficients"));
  ONNXKIT_ASSIGN(m->support_vectors, attr_doubles(info, "support_vectors"));
  ONNXKIT_ASSIGN(m->rho, attr_doubles(info, "rho"));
  ONNXKIT_ASSIGN(m->prob_a, attr_doubles(info, "prob_a"));
  ONNXKIT_ASSIGN(m->prob_b, attr_doubles(info, "prob_b"));
  ONNXKIT_ASSIGN(m->post, parse_post_transform(info));
  m->int_labels = info.attr_ints("classlabels_ints");
  m->string_labels = info.attr_strings("classlabels_strings");
  if (m->int_labels.empty() == m->string_labels.empty())
    return make_error("exactly one of classlabels_ints and classlabels_strings must be given");
  m->classes = static_cast<int64_t>(m->string_labels.empty() ? m->int_labels.size() : m->string_labels.size());
  m->vectors_per_class = info.attr_ints("vectors_per_class");
  for (int64_t v : m->vectors_per_class) {
    if (v < 0) return make_error("vectors_per_class has a negative entry");
    m->first_vector.push_back(m->vectors);
    m->vectors += v;
  }
  const int64_t k = m->classes, pairs = k * (k - 1) / 2;
  if (m->prob_a.size() != m->prob_b.size()) return make_error("prob_a and prob_b differ in length");
  if (m->coefficients.empty() || m->rho.empty()) return make_error("attributes coefficients and rho are required");
  if (m->vectors > 0) {
    if (static_cast<int64_t>(m->vectors_per_class.size()) != k)
      return make_error("vectors_per_class has {} entries for {} classes", m->vectors_per_class.size(), k);
    if (static_cast<int64_t>(m->coefficients.size()) < (k - 1) * m->vectors || static_cast<int64_t>(m->rho.size()) < pairs ||
        (!m->prob_a.empty() && static_cast<int64_t>(m->prob_a.size()) < pairs) ||
        m->support_vectors.size() % static_cast<size_t>(m->vectors) != 0)
      return make_error("coefficients, rho, prob_a or support_vectors is too short for {} classes and {} support vectors", k,
                        m->vectors);
  } else if (m->coefficients.size() % static_cast<size_t>(k) != 0) {
    return make_error("{} coefficients for {} classes", m->coefficients.size(), k);
  }
  m->weights_positive = std::all_of(m->coefficients.begin(), m->coefficients.end(), [](double w) { return w >= 0; });
  return ComputeFn([m](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(Rows rows, rows_of(*x));
    const int64_t k = m->classes, pairs = k * (k - 1) / 2;
    const bool svc = m->vectors > 0, proba = !m->prob_a.empty();
    const int64_t width =
        svc ? static_cast<int64_t>(m->support_vectors.size()) / m->vectors : static_cast<int64_t>(m->coefficients.size()) / k;
    if (width != rows.c) return make_error("input X has {} features; the model has {}", rows.c, width);
    ONNXKIT_ASSIGN(std::vector<double> v, features_as_doubles(*x));
    const int64_t out_width = svc && !proba ? (k > 2 ? pairs : 2) : k;
    std::vector<double> z(static_cast<size_t>(rows.n * out_width));
    std::vector<int64_t> label(static_cast<size_t>(rows.n));
    std::vector<double> kernels(static_cast<size_t>(m->vectors)), scores(static_cast<size_t>(std::max(pairs, k)));
    std::vector<int64_t> votes(static_cast<size_t>(k));
    for (int64_t n = 0; n < rows.n; ++n) {
      const double* xi = v.data() + n * rows.c;
      double* out = z.data() + n * out_width;
      if (!svc) {
        for (int64_t c = 0; c < k; ++c) scores[c] = m->kernel(xi, m->coefficients.data() + c * rows.c, rows.c) + m->rho[0];
        const int64_t best = std::max_element(scores.begin(), scores.begin() + k) - scores.begin();
        const double top = scores[best];
        if (k == 2) label[n] = (m->weights_positive && top >= 0.5) || (top > 0 && !m->weights_positive) ? 1 : best;
        else label[n] = best;
        std::copy(scores.begin(), scores.begin() + k, out);
        apply_post_transform(m->post, out, k);
        continue;
      }
      for (int64_t j = 0; j < m->vectors; ++j) kernels[j] = m->kernel(xi, m->support_vectors.data() + j * rows.c, rows.c);
      std::fill(votes.begin(), votes.end(), 0);
      int64_t pair = 0;
      for (int64_t i = 0; i < k - 1; ++i)
        for (int64_t j = i + 1; j < k; ++j, ++pair) {
          double sum = 0;
          const double* ci = m->coefficients.data() + (j - 1) * m->vectors;
          const double* cj = m->coefficients.data() + i * m->vectors;
          for (int64_t s = m->first_vector[i]; s < m->first_vector[i] + m->vectors_per_class[i]; ++s) sum += ci[s] * kernels[s];
          for (int64_t s = m->first_vector[j]; s < m->first_vector[j] + m->vectors_per_class[j]; ++s) sum += cj[s] * kernels[s];
          sum += m->rho[pair];
          scores[pair] = sum;
          ++votes[sum > 0 ? i : j];
        }
      label[n] = std::max_element(votes.begin(), votes.end()) - votes.begin();
      if (proba) {
        std::vector<double> r(static_cast<size_t>(k * k), 0.0);
        pair = 0;
        for (int64_t i = 0; i < k - 1; ++i)
          for (int64_t j = i + 1; j < k; ++j, ++pair) {
            double p = 1.0 - logistic(scores[pair] * m->prob_a[pair] + m->prob_b[pair]);
            p = std::min(std::max(p, 1e-7), 1 - 1e-7);
            r[i * k + j] = p;
            r[j * k + i] = 1 - p;
          }
        multiclass_probability(k, r, out);
        apply_post_transform(m->post, out, k);
      } else if (k > 2) {
        std::copy(scores.begin(), scores.begin() + pairs, out);
        apply_post_transform(m->post, out, pairs);
      } else {
        // One decision value: its negation scores the first class.
        double s = scores[0];
        if (m->post == PostTransform::none) {
          out[0] = -s;
          out[1] = s;
        } else {
          apply_post_transform(m->post, &s, 1);
          out[0] = 1.0 - s;
          out[1] = s;
        }
      }
    }
    write_classifier_outputs(ctx, m->int_labels, m->string_labels, label, z, out_width);
    return {};
  });
}

}  // namespace

void register_svm(KernelRegistry& r) {
  r.add(std::string(kDomain), "SVMClassifier", 1, kLatestOpset, make_kernel(build_classifier));
  r.add(std::string(kDomain), "SVMRegressor", 1, kLatestOpset, make_kernel(build_regressor));
}

}  // namespace onnxkit::runtime::ml
