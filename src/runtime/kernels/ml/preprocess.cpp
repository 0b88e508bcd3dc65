// The feature transforms of ai.onnx.ml: Normalizer, Scaler, Binarizer,
// Imputer, ArrayFeatureExtractor and FeatureVectorizer.

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime::ml {
namespace {

// --- Normalizer -----------------------------------------------------------------

Result<ComputeFn> build_normalizer(const KernelInfo& info) {
  const std::string norm = info.attr_string("norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2") return make_error("norm '{}' is not one of MAX, L1, L2", norm);
  return ComputeFn([norm](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(Rows rows, rows_of(*x));
    ONNXKIT_ASSIGN(std::vector<double> v, features_as_doubles(*x));
    float* y = ctx.output(0, DataType::float32, x->shape()).mutable_data<float>();
    for (int64_t i = 0; i < rows.n; ++i) {
      const double* r = v.data() + i * rows.c;
      double d = 0;
      if (norm == "MAX") {
        d = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < rows.c; ++j) d = std::max(d, r[j]);
      } else if (norm == "L1") {
        for (int64_t j = 0; j < rows.c; ++j) d += std::abs(r[j]);
      } else {
        for (int64_t j = 0; j < rows.c; ++j) d += r[j] * r[j];
        d = std::sqrt(d);
      }
      // A zero row stays as it is.
      if (d == 0 || !std::isfinite(d)) d = 1;
      for (int64_t j = 0; j < rows.c; ++j) y[i * rows.c + j] = static_cast<float>(r[j] / d);
    }
    return {};
  });
}

// --- Scaler -----------------------------------------------------------------------

Result<ComputeFn> build_scaler(const KernelInfo& info) {
  std::vector<float> offset = info.attr_floats("offset"), scale = info.attr_floats("scale");
  return ComputeFn([offset, scale](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    const int64_t c = x->rank() == 0 ? 1 : x->shape().back();
    auto fits = [&](size_t size) { return size <= 1 || static_cast<int64_t>(size) == c; };
    if (!fits(offset.size()) || !fits(scale.size()))
      return make_error("offset ({}) and scale ({}) must have 1 or {} entries (input X's last dim)", offset.size(), scale.size(),
                        c);
    ONNXKIT_ASSIGN(std::vector<double> v, features_as_doubles(*x));
    float* y = ctx.output(0, DataType::float32, x->shape()).mutable_data<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      const size_t j = static_cast<size_t>(i % c);
      const float o = offset.empty() ? 0.0f : offset[offset.size() == 1 ? 0 : j];
      const float s = scale.empty() ? 1.0f : scale[scale.size() == 1 ? 0 : j];
      y[i] = static_cast<float>((v[i] - o) * s);
    }
    return {};
  });
}

// --- Binarizer --------------------------------------------------------------------

Result<ComputeFn> build_binarizer(const KernelInfo& info) {
  const double threshold = info.attr_float("threshold", 0.0f);
  return ComputeFn([threshold](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    Tensor& y = ctx.output(0, x->dtype(), x->shape());
    return dispatch_numeric(x->dtype(), [&]<class T>() -> Status {
      if constexpr (is_half_v<T>) {
        return make_error("element type {} is not supported here", to_string(x->dtype()));
      } else {
        const T* px = x->data<T>();
        T* py = y.mutable_data<T>();
        for (int64_t i = 0; i < x->numel(); ++i) py[i] = static_cast<double>(px[i]) > threshold ? T(1) : T(0);
        return {};
      }
    });
  });
}

// --- Imputer ----------------------------------------------------------------------

Result<ComputeFn> build_imputer(const KernelInfo& info) {
  std::vector<float> floats = info.attr_floats("imputed_value_floats");
  std::vector<int64_t> ints = info.attr_ints("imputed_value_int64s");
  const float replaced_float = info.attr_float("replaced_value_float", 0.0f);
  const int64_t replaced_int = info.attr_int("replaced_value_int64", 0);
  if (floats.empty() == ints.empty())
    return make_error("exactly one of imputed_value_floats and imputed_value_int64s must be given");
  return ComputeFn([floats, ints, replaced_float, replaced_int](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    const int64_t c = x->rank() == 0 ? 1 : x->shape().back();
    const size_t given = floats.empty() ? ints.size() : floats.size();
    if (given != 1 && static_cast<int64_t>(given) != c)
      return make_error("{} imputed values for input X's last dim of {}", given, c);
    Tensor& y = ctx.output(0, x->dtype(), x->shape());
    const int64_t n = x->numel();
    auto pick = [&](int64_t i) { return given == 1 ? 0 : static_cast<size_t>(i % c); };
    if (x->dtype() == DataType::float32 || x->dtype() == DataType::float64) {
      if (floats.empty()) return make_error("input X is {} but the imputed values are int64", to_string(x->dtype()));
      const bool nan = std::isnan(replaced_float);
      auto run = [&]<class T>(const T* px, T* py) {
        for (int64_t i = 0; i < n; ++i) {
          const bool hit = nan ? std::isnan(px[i]) : px[i] == static_cast<T>(replaced_float);
          py[i] = hit ? static_cast<T>(floats[pick(i)]) : px[i];
        }
      };
      if (x->dtype() == DataType::float32) run(x->data<float>(), y.mutable_data<float>());
      else run(x->data<double>(), y.mutable_data<double>());
      return {};
    }
    if (x->dtype() == DataType::int64 || x->dtype() == DataType::int32) {
      if (ints.empty()) return make_error("input X is {} but the imputed values are floats", to_string(x->dtype()));
      auto run = [&]<class T>(const T* px, T* py) {
        for (int64_t i = 0; i < n; ++i)
          py[i] = static_cast<int64_t>(px[i]) == replaced_int ? static_cast<T>(ints[pick(i)]) : px[i];
      };
      if (x->dtype() == DataType::int64) run(x->data<int64_t>(), y.mutable_data<int64_t>());
      else run(x->data<int32_t>(), y.mutable_data<int32_t>());
      return {};
    }
    return make_error("input X is {}; float, double, int64 or int32 expected", to_string(x->dtype()));
  });
}

// --- ArrayFeatureExtractor --------------------------------------------------------

Status compute_array_feature_extractor(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* y_idx, ctx.tensor(1));
  if (x->rank() == 0) return make_error("input X must have a rank of 1 or more");
  ONNXKIT_ASSIGN(std::vector<int64_t> indices, read_int64s(*y_idx));
  const int64_t c = x->shape().back();
  for (int64_t i : indices)
    if (i < 0 || i >= c) return make_error("index {} of input Y is outside X's last dim of {}", i, c);
  Shape out = x->rank() == 1 ? Shape{1} : Shape(x->shape().begin(), x->shape().end() - 1);
  out.push_back(static_cast<int64_t>(indices.size()));
  Tensor& z = ctx.output(0, x->dtype(), out);
  const int64_t rows = x->numel() / std::max<int64_t>(c, 1);
  const int64_t k = static_cast<int64_t>(indices.size());
  for (int64_t r = 0; r < rows && c > 0; ++r)
    for (int64_t j = 0; j < k; ++j) copy_elements(*x, r * c + indices[j], z, r * k + j, 1);
  return {};
}

// --- FeatureVectorizer ------------------------------------------------------------

Result<ComputeFn> build_feature_vectorizer(const KernelInfo& info) {
  std::vector<int64_t> dims = info.attr_ints("inputdimensions");
  for (int64_t d : dims)
    if (d < 0) return make_error("inputdimensions has a negative entry {}", d);
  return ComputeFn([dims](KernelContext& ctx) -> Status {
    if (ctx.num_inputs() != dims.size()) return make_error("{} inputs for {} inputdimensions", ctx.num_inputs(), dims.size());
    int64_t n = -1, width = 0;
    std::vector<std::vector<double>> parts;
    std::vector<Rows> shapes;
    for (size_t k = 0; k < dims.size(); ++k) {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(k));
      // [N, C] or [C]; higher ranks are [N, rest flattened].
      Rows r = x->rank() <= 1 ? Rows{1, x->numel()} : Rows{x->dim(0), x->numel() / std::max<int64_t>(x->dim(0), 1)};
      if (n >= 0 && r.n != n) return make_error("input {} has {} rows, input 0 has {}", k, r.n, n);
      n = r.n;
      ONNXKIT_ASSIGN(std::vector<double> v, features_as_doubles(*x));
      parts.push_back(std::move(v));
      shapes.push_back(r);
      width += dims[k];
    }
    float* y = ctx.output(0, DataType::float32, {n, width}).mutable_data<float>();
    std::fill(y, y + n * width, 0.0f);
    int64_t at = 0;
    for (size_t k = 0; k < dims.size(); ++k) {
      const int64_t take = std::min(dims[k], shapes[k].c);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < take; ++j) y[i * width + at + j] = static_cast<float>(parts[k][i * shapes[k].c + j]);
      at += dims[k];
    }
    return {};
  });
}

}  // namespace

void register_preprocess(KernelRegistry& r) {
  const std::string d(kDomain);
  r.add(d, "Normalizer", 1, kLatestOpset, make_kernel(build_normalizer));
  r.add(d, "Scaler", 1, kLatestOpset, make_kernel(build_scaler));
  r.add(d, "Binarizer", 1, kLatestOpset, make_kernel(build_binarizer));
  r.add(d, "Imputer", 1, kLatestOpset, make_kernel(build_imputer));
  r.add(d, "ArrayFeatureExtractor", 1, kLatestOpset, make_kernel(compute_array_feature_extractor));
  r.add(d, "FeatureVectorizer", 1, kLatestOpset, make_kernel(build_feature_vectorizer));
}

}  // namespace onnxkit::runtime::ml
