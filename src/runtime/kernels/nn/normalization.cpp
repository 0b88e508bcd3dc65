// Normalizations: BatchNormalization, InstanceNormalization,
// LayerNormalization, RMSNormalization, GroupNormalization, LRN,
// MeanVarianceNormalization, LpNormalization. Statistics accumulate in
// double whatever the element type.

#include <algorithm>
#include <cmath>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::nn {
namespace {

// Mean and population variance of n values, two passes for accuracy.
template <class T> void mean_variance(const T* x, int64_t n, double& mean, double& var) {
  using C = compute_t<T>;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(static_cast<C>(x[i]));
  mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(static_cast<C>(x[i])) - mean;
    sq += d * d;
  }
  var = n > 0 ? sq / static_cast<double>(n) : 0.0;
}

// y[i] = x[i] * a + b over n values.
template <class T> void scale_shift(const T* x, T* y, int64_t n, double a, double b) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, double>) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
  } else {
    const float af = static_cast<float>(a), bf = static_cast<float>(b);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<C>(static_cast<float>(x[i]) * af + bf));
  }
}

// A per-channel parameter: `count` values, any float type.
Result<std::vector<double>> channel_param(KernelContext& ctx, size_t index, const char* name, int64_t count,
                                          std::string_view what) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(index));
  if (t->numel() != count)
    return make_error("{} has shape {} ({} values), expected {} ({})", name, shape_to_string(t->shape()), t->numel(), count,
                      what);
  return read_doubles(*t, name);
}

// --- BatchNormalization -------------------------------------------------------------

KernelFactory batch_norm_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const int64_t opset = info.opset();
    const double epsilon = info.attr_float("epsilon", 1e-5f);
    const double momentum = info.attr_float("momentum", 0.9f);
    const bool spatial = opset >= 9 || info.attr_int("spatial", 1) != 0;
    // Before opset 14 the extra outputs themselves ask for training; opset 6
    // also has is_test. From 14 the training_mode attribute decides.
    bool training;
    if (opset >= 14) training = info.attr_int("training_mode", 0) != 0;
    else training = info.num_outputs() > 1 && !(opset < 7 && info.attr_int("is_test", 0) != 0);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->rank() < 2) return make_error("X must have shape [N, C, ...], got {}", shape_to_string(x->shape()));
      const int64_t n_batch = x->dim(0), channels = x->dim(1), spatial_size = dims_product(x->shape(), 2, x->rank());
      // spatial = 0 (before opset 9): one parameter per element of a sample.
      const int64_t groups = spatial ? channels : channels * spatial_size;
      const int64_t inner = spatial ? spatial_size : 1;
      const char* what = spatial ? "one per channel" : "one per element of a sample (spatial = 0)";
      ONNXKIT_ASSIGN(std::vector<double> scale, channel_param(ctx, 1, "scale", groups, what));
      ONNXKIT_ASSIGN(std::vector<double> shift, channel_param(ctx, 2, "B", groups, what));
      ONNXKIT_ASSIGN(std::vector<double> mean, channel_param(ctx, 3, "input_mean", groups, what));
      ONNXKIT_ASSIGN(std::vector<double> var, channel_param(ctx, 4, "input_var", groups, what));
      const DataType stat_type = ctx.input(3).dtype();
      std::vector<double> batch_mean(static_cast<size_t>(groups)), batch_var(static_cast<size_t>(groups));
      if (training) {
        // Population statistics over the batch and the spatial dims.
        Status counted = dispatch_float(x->dtype(), [&]<class T>() -> Status {
          using C = compute_t<T>;
          const T* xp = x->data<T>();
#pragma omp parallel for if (x->numel() >= kParallelWork && groups > 1) schedule(static)
          for (int64_t k = 0; k < groups; ++k) {
            double sum = 0, sq = 0;
            for (int64_t n = 0; n < n_batch; ++n) {
              const T* v = xp + (n * groups + k) * inner;
              for (int64_t i = 0; i < inner; ++i) sum += static_cast<double>(static_cast<C>(v[i]));
            }
            const double count = static_cast<double>(n_batch * inner);
            const double m = count > 0 ? sum / count : 0.0;
            for (int64_t n = 0; n < n_batch; ++n) {
              const T* v = xp + (n * groups + k) * inner;
              for (int64_t i = 0; i < inner; ++i) {
                const double d = static_cast<double>(static_cast<C>(v[i])) - m;
                sq += d * d;
              }
            }
            batch_mean[static_cast<size_t>(k)] = m;
            batch_var[static_cast<size_t>(k)] = count > 0 ? sq / count : 0.0;
          }
          return {};
        });
        if (!counted.ok()) return counted;
      }
      const std::vector<double>& use_mean = training ? batch_mean : mean;
      const std::vector<double>& use_var = training ? batch_var : var;
      std::vector<double> a(static_cast<size_t>(groups)), b(static_cast<size_t>(groups));
      for (size_t k = 0; k < a.size(); ++k) {
        a[k] = scale[k] / std::sqrt(use_var[k] + epsilon);
        b[k] = shift[k] - use_mean[k] * a[k];
      }
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      Status normalized = dispatch_float(x->dtype(), [&]<class T>() -> Status {
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
        const int64_t planes = n_batch * groups;
#pragma omp parallel for if (x->numel() >= kParallelWork && planes > 1) schedule(static)
        for (int64_t q = 0; q < planes; ++q) {
          const size_t k = static_cast<size_t>(q % groups);
          scale_shift(xp + q * inner, yp + q * inner, inner, a[k], b[k]);
        }
        return {};
      });
      if (!normalized.ok()) return normalized;
      // Extra outputs: running statistics (and, before opset 14, the batch ones).
      const Shape stat_shape = ctx.input(3).shape();
      auto emit = [&](size_t i, const std::vector<double>& v) {
        if (ctx.wants_output(i)) ctx.set_output(i, doubles_to_tensor(stat_type, stat_shape, v));
      };
      if (training) {
        std::vector<double> running_mean(mean.size()), running_var(var.size());
        for (size_t k = 0; k < mean.size(); ++k) {
          running_mean[k] = mean[k] * momentum + batch_mean[k] * (1 - momentum);
          running_var[k] = var[k] * momentum + batch_var[k] * (1 - momentum);
        }
        emit(1, running_mean);
        emit(2, running_var);
        emit(3, batch_mean);
        emit(4, batch_var);
      } else {
        emit(1, mean);
        emit(2, var);
        emit(3, mean);
        emit(4, var);
      }
      return {};
    });
  });
}

// --- InstanceNormalization ------------------------------------------------------------

KernelFactory instance_norm_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const double epsilon = info.attr_float("epsilon", 1e-5f);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->rank() < 3) return make_error("input must have shape [N, C, D1, ...], got {}", shape_to_string(x->shape()));
      const int64_t channels = x->dim(1), planes = x->dim(0) * channels, size = dims_product(x->shape(), 2, x->rank());
      ONNXKIT_ASSIGN(std::vector<double> scale, channel_param(ctx, 1, "scale", channels, "one per channel"));
      ONNXKIT_ASSIGN(std::vector<double> shift, channel_param(ctx, 2, "B", channels, "one per channel"));
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
#pragma omp parallel for if (x->numel() >= kParallelWork && planes > 1) schedule(static)
        for (int64_t q = 0; q < planes; ++q) {
          const size_t c = static_cast<size_t>(q % channels);
          double mean, var;
          mean_variance(xp + q * size, size, mean, var);
          const double a = scale[c] / std::sqrt(var + epsilon);
          scale_shift(xp + q * size, yp + q * size, size, a, shift[c] - mean * a);
        }
        return {};
      });
    });
  });
}

// --- LayerNormalization ---------------------------------------------------------------

// The element type a stash_type code names.
Result<DataType> stash_type(int64_t code) {
  const auto t = static_cast<DataType>(code);
  if (!is_floating(t)) return make_error("stash_type {} is not a floating-point element type", code);
  return t;
}

// `param` (Scale or B) read as one value per element of X, through the
// unidirectional broadcast of its shape to X's; returned as a row of `inner`
// values when it does not vary over the leading `outer` rows.
Result<std::vector<double>> broadcast_param(const Tensor& param, const char* name, const Shape& x_shape, size_t axis,
                                            bool& per_row) {
  ONNXKIT_ASSIGN(std::vector<double> values, read_doubles(param, name));
  const Shape& p = param.shape();
  if (p.size() > x_shape.size())
    return make_error("{} has shape {}, which does not broadcast to X {}", name, shape_to_string(p), shape_to_string(x_shape));
  const size_t lead = x_shape.size() - p.size();
  for (size_t d = 0; d < p.size(); ++d)
    if (p[d] != 1 && p[d] != x_shape[lead + d])
      return make_error("{} has shape {}, which does not broadcast to X {}", name, shape_to_string(p), shape_to_string(x_shape));
  per_row = true;
  for (size_t d = lead; d < axis; ++d) per_row = per_row && p[d - lead] == 1;
  const size_t first = per_row ? axis : 0;
  Shape target(x_shape.begin() + static_cast<std::ptrdiff_t>(first), x_shape.end());
  std::vector<int64_t> strides(target.size(), 0);
  // Strides of param as seen over `target`: 0 along broadcast dims.
  int64_t stride = 1;
  for (size_t d = x_shape.size(); d-- > first;) {
    if (d >= lead) {
      const int64_t size = p[d - lead];
      strides[d - first] = size == 1 ? 0 : stride;
      stride *= size;
    }
  }
  const int64_t total = shape_size(target);
  std::vector<double> out(static_cast<size_t>(total));
  std::vector<int64_t> index(target.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < target.size(); ++d) at += index[d] * strides[d];
    out[static_cast<size_t>(i)] = values[static_cast<size_t>(at)];
    for (size_t d = target.size(); d-- > 0;) {
      if (++index[d] < target[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// Positions p0..p0 + count (count <= kPositions) of one image x [C, P],
// normalized over C, into y [P, C]. The statistics go across the positions
// in vector lanes, reading each channel's run where it lies; the normalized
// tile is written out a position at a time.
constexpr int64_t kPositions = 16;
void layer_norm_positions(const float* x, int64_t channels, int64_t positions, int64_t p0, int64_t count, const float* scale,
                          const float* bias, float epsilon, float* y) {
  float mean[kPositions] = {}, var[kPositions] = {}, tile[kPositions];
  for (int64_t c = 0; c < channels; ++c) {
    const float* row = x + c * positions + p0;
    for (int64_t j = 0; j < count; ++j) mean[j] += row[j];
  }
  for (int64_t j = 0; j < count; ++j) mean[j] /= static_cast<float>(channels);
  // The variance from the centred values: no cancellation for large means.
  for (int64_t c = 0; c < channels; ++c) {
    const float* row = x + c * positions + p0;
    for (int64_t j = 0; j < count; ++j) {
      const float d = row[j] - mean[j];
      var[j] += d * d;
    }
  }
  for (int64_t j = 0; j < count; ++j) var[j] = 1.0f / std::sqrt(var[j] / static_cast<float>(channels) + epsilon);
  for (int64_t c = 0; c < channels; ++c) {
    const float* row = x + c * positions + p0;
    const float s = scale[c], b = bias != nullptr ? bias[c] : 0.0f;
    for (int64_t j = 0; j < count; ++j) tile[j] = (row[j] - mean[j]) * var[j] * s + b;
    for (int64_t j = 0; j < count; ++j) y[(p0 + j) * channels + c] = tile[j];
  }
}

}  // namespace

KernelFactory channels_last_layer_norm_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const auto epsilon = static_cast<float>(info.attr_float("epsilon", 1e-5f));
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* scale, ctx.tensor(1));
      const Tensor* bias = nullptr;
      if (ctx.has_input(2)) {
        ONNXKIT_ASSIGN(bias, ctx.tensor(2));
      }
      if (x->dtype() != DataType::float32 || x->rank() < 3)
        return make_error("the Transpose+LayerNormalization fused here takes float X of rank 3 or more, got {} {}",
                          to_string(x->dtype()), shape_to_string(x->shape()));
      const int64_t batch = x->dim(0), channels = x->dim(1), positions = dims_product(x->shape(), 2, x->rank());
      // One float per channel, or one for all (broadcast).
      std::vector<float> scale_all, bias_all;
      auto per_channel = [&](const Tensor* t, std::vector<float>& all) -> const float* {
        if (t->dtype() != DataType::float32) return nullptr;
        if (t->numel() == channels) return t->data<float>();
        if (t->numel() != 1) return nullptr;
        all.assign(static_cast<size_t>(channels), t->data<float>()[0]);
        return all.data();
      };
      const float* sp = per_channel(scale, scale_all);
      const float* bp = bias != nullptr ? per_channel(bias, bias_all) : nullptr;
      if (sp == nullptr || (bias != nullptr && bp == nullptr))
        return make_error("Scale and B must be one float per channel ({}) or one for all, got {} {} and {}", channels,
                          to_string(scale->dtype()), shape_to_string(scale->shape()),
                          bias != nullptr ? shape_to_string(bias->shape()) : "none");
      Shape out_shape(x->shape().begin() + 2, x->shape().end());
      out_shape.insert(out_shape.begin(), batch);
      out_shape.push_back(channels);
      Tensor& y = ctx.output(0, DataType::float32, out_shape);
      const float* xp = x->data<float>();
      float* yp = y.mutable_data<float>();
      const int64_t tiles = (positions + kPositions - 1) / kPositions;
      parallel_ranges(batch * tiles, x->numel() >= kParallelWork, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t n = item / tiles, p0 = (item % tiles) * kPositions;
          const int64_t image = n * channels * positions;
          layer_norm_positions(xp + image, channels, positions, p0, std::min(kPositions, positions - p0), sp, bp, epsilon,
                               yp + image);
        }
      });
      return {};
    });
  });
}

KernelFactory layer_norm_kernel(bool residual) {
  return make_kernel([residual](const KernelInfo& info) -> Result<ComputeFn> {
    const int64_t axis_attr = info.attr_int("axis", -1);
    const double epsilon = info.attr_float("epsilon", 1e-5f);
    ONNXKIT_ASSIGN(DataType stat_type, stash_type(info.attr_int("stash_type", 1)));
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      // Fused: X is inputs 0 + 1 (same shape and type, checked when fused).
      const Tensor* addend = nullptr;
      if (residual) {
        ONNXKIT_ASSIGN(addend, ctx.tensor(1));
        if (addend->shape() != x->shape() || addend->dtype() != x->dtype())
          return make_error("the residual Add fused here has inputs {} {} and {} {}", to_string(x->dtype()),
                            shape_to_string(x->shape()), to_string(addend->dtype()), shape_to_string(addend->shape()));
      }
      const size_t first_param = residual ? 2 : 1;
      ONNXKIT_ASSIGN(const Tensor* scale_t, ctx.tensor(first_param));
      const int64_t rank = static_cast<int64_t>(x->rank());
      ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, rank, "axis"));
      const int64_t rows = dims_product(x->shape(), 0, static_cast<size_t>(axis));
      const int64_t n = dims_product(x->shape(), static_cast<size_t>(axis), x->rank());
      bool scale_row = true, bias_row = true;
      ONNXKIT_ASSIGN(std::vector<double> scale,
                     broadcast_param(*scale_t, "Scale", x->shape(), static_cast<size_t>(axis), scale_row));
      std::vector<double> bias;
      if (ctx.has_input(first_param + 1)) {
        ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(first_param + 1));
        ONNXKIT_ASSIGN(bias, broadcast_param(*b, "B", x->shape(), static_cast<size_t>(axis), bias_row));
      }
      // float32 rows with one Scale and B for all, and no statistics asked:
      // the vectorized row (statistics in float, not double).
      if (x->dtype() == DataType::float32 && scale_row && bias_row && !ctx.wants_output(1) && !ctx.wants_output(2)) {
        const std::vector<float> scale_f(scale.begin(), scale.end()), bias_f(bias.begin(), bias.end());
        Tensor& y = ctx.output(0, x->dtype(), x->shape());
        const float* xp = x->data<float>();
        const float* ap = addend != nullptr ? addend->data<float>() : nullptr;
        float* yp = y.mutable_data<float>();
#pragma omp parallel for if (x->numel() >= kParallelWork && rows > 1) schedule(static)
        for (int64_t r = 0; r < rows; ++r)
          layer_norm_floats(xp + r * n, ap != nullptr ? ap + r * n : nullptr, scale_f.data(),
                            bias_f.empty() ? nullptr : bias_f.data(), yp + r * n, n, static_cast<float>(epsilon));
        return {};
      }
      Tensor sum;
      if (addend != nullptr) {  // the general path normalizes the sum
        sum = Tensor(x->dtype(), x->shape());
        ONNXKIT_TRY(dispatch_float(x->dtype(), [&]<class T>() -> Status {
          for (int64_t i = 0; i < x->numel(); ++i)
            sum.mutable_data<T>()[i] =
                static_cast<T>(static_cast<compute_t<T>>(x->data<T>()[i]) + static_cast<compute_t<T>>(addend->data<T>()[i]));
          return {};
        }));
        x = &sum;
      }
      Shape stat_shape = x->shape();
      for (int64_t d = axis; d < rank; ++d) stat_shape[static_cast<size_t>(d)] = 1;
      std::vector<double> means(static_cast<size_t>(rows)), inv_stds(static_cast<size_t>(rows));
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      Status normalized = dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
#pragma omp parallel for if (x->numel() >= kParallelWork && rows > 1) schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          double mean, var;
          mean_variance(xp + r * n, n, mean, var);
          const double inv = 1.0 / std::sqrt(var + epsilon);
          means[static_cast<size_t>(r)] = mean;
          inv_stds[static_cast<size_t>(r)] = inv;
          const double* s = scale.data() + (scale_row ? 0 : r * n);
          const double* b = bias.empty() ? nullptr : bias.data() + (bias_row ? 0 : r * n);
          for (int64_t i = 0; i < n; ++i) {
            const double v = (static_cast<double>(static_cast<C>(xp[r * n + i])) - mean) * inv * s[i];
            yp[r * n + i] = static_cast<T>(static_cast<C>(b ? v + b[i] : v));
          }
        }
        return {};
      });
      if (!normalized.ok()) return normalized;
      if (ctx.wants_output(1)) ctx.set_output(1, doubles_to_tensor(stat_type, stat_shape, means));
      if (ctx.wants_output(2)) ctx.set_output(2, doubles_to_tensor(stat_type, stat_shape, inv_stds));
      return {};
    });
  });
}

namespace {

// --- RMSNormalization (opset 23) ---------------------------------------------------------

// Y = X / sqrt(mean(X^2 over the dims from axis on) + epsilon) * Scale: a
// LayerNormalization without the mean and without B. The statistics are in
// double, which covers every stash_type; Y takes Scale's element type.
KernelFactory rms_norm_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const int64_t axis_attr = info.attr_int("axis", -1);
    const double epsilon = info.attr_float("epsilon", 1e-5f);
    ONNXKIT_ASSIGN(DataType unused, stash_type(info.attr_int("stash_type", 1)));
    (void)unused;
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* scale_t, ctx.tensor(1));
      if (!is_floating(x->dtype()) || !is_floating(scale_t->dtype()))
        return make_error("X and scale must be floating-point, got {} and {}", to_string(x->dtype()),
                          to_string(scale_t->dtype()));
      ONNXKIT_ASSIGN(const int64_t axis, normalize_axis(axis_attr, static_cast<int64_t>(x->rank()), "axis"));
      const int64_t rows = dims_product(x->shape(), 0, static_cast<size_t>(axis));
      const int64_t n = dims_product(x->shape(), static_cast<size_t>(axis), x->rank());
      bool scale_row = true;
      ONNXKIT_ASSIGN(std::vector<double> scale,
                     broadcast_param(*scale_t, "scale", x->shape(), static_cast<size_t>(axis), scale_row));
      ONNXKIT_ASSIGN(std::vector<double> xs, read_doubles(*x, "X"));
      std::vector<double> ys(xs.size());
#pragma omp parallel for if (x->numel() >= kParallelWork && rows > 1) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const double* xr = xs.data() + r * n;
        double squares = 0;
        for (int64_t i = 0; i < n; ++i) squares += xr[i] * xr[i];
        const double inv_rms = 1.0 / std::sqrt(squares / static_cast<double>(n) + epsilon);
        const double* s = scale.data() + (scale_row ? 0 : r * n);
        for (int64_t i = 0; i < n; ++i) ys[static_cast<size_t>(r * n + i)] = xr[i] * inv_rms * s[i];
      }
      ctx.set_output(0, doubles_to_tensor(scale_t->dtype(), x->shape(), ys));
      return {};
    });
  });
}

// --- GroupNormalization -----------------------------------------------------------------

// Opset 18 takes one scale and bias per group; opset 21 one per channel.
KernelFactory group_norm_kernel(bool per_channel) {
  return make_kernel([per_channel](const KernelInfo& info) -> Result<ComputeFn> {
    const double epsilon = info.attr_float("epsilon", 1e-5f);
    if (!info.has_attr("num_groups")) return make_error("num_groups is required");
    const int64_t groups = info.attr_int("num_groups", 1);
    if (groups < 1) return make_error("num_groups is {}, must be at least 1", groups);
    if (per_channel) {
      ONNXKIT_ASSIGN(DataType unused, stash_type(info.attr_int("stash_type", 1)));
      (void)unused;
    }
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->rank() < 2) return make_error("X must have shape [N, C, ...], got {}", shape_to_string(x->shape()));
      const int64_t channels = x->dim(1);
      if (channels % groups != 0) return make_error("X has {} channels, which num_groups {} does not divide", channels, groups);
      const int64_t count = per_channel ? channels : groups;
      const char* what = per_channel ? "one per channel" : "one per group (opset 18)";
      ONNXKIT_ASSIGN(std::vector<double> scale, channel_param(ctx, 1, "scale", count, what));
      ONNXKIT_ASSIGN(std::vector<double> bias, channel_param(ctx, 2, "bias", count, what));
      const int64_t per_group = channels / groups, size = dims_product(x->shape(), 2, x->rank());
      const int64_t blocks = x->dim(0) * groups;
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
#pragma omp parallel for if (x->numel() >= kParallelWork && blocks > 1) schedule(static)
        for (int64_t q = 0; q < blocks; ++q) {
          const int64_t g = q % groups, span = per_group * size;
          double mean, var;
          mean_variance(xp + q * span, span, mean, var);
          const double inv = 1.0 / std::sqrt(var + epsilon);
          for (int64_t c = 0; c < per_group; ++c) {
            const size_t k = static_cast<size_t>(per_channel ? g * per_group + c : g);
            const double a = scale[k] * inv;
            scale_shift(xp + q * span + c * size, yp + q * span + c * size, size, a, bias[k] - mean * a);
          }
        }
        return {};
      });
    });
  });
}

// --- LRN ---------------------------------------------------------------------------------

KernelFactory lrn_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const double alpha = info.attr_float("alpha", 1e-4f), beta = info.attr_float("beta", 0.75f);
    const double bias = info.attr_float("bias", 1.0f);
    if (!info.has_attr("size")) return make_error("size is required");
    const int64_t size = info.attr_int("size", 1);
    if (size < 1) return make_error("size is {}, must be at least 1", size);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->rank() < 3) return make_error("X must have shape [N, C, D1, ...], got {}", shape_to_string(x->shape()));
      const int64_t n_batch = x->dim(0), channels = x->dim(1), plane = dims_product(x->shape(), 2, x->rank());
      // The window over channels: floor((size-1)/2) before, ceil((size-1)/2) after.
      const int64_t before = (size - 1) / 2, after = size - 1 - before;
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
        const int64_t planes = n_batch * channels;
#pragma omp parallel for if (x->numel() * size >= kParallelWork && planes > 1) schedule(static)
        for (int64_t q = 0; q < planes; ++q) {
          const int64_t n = q / channels, c = q % channels;
          const int64_t c0 = std::max<int64_t>(0, c - before), c1 = std::min(channels - 1, c + after);
          for (int64_t i = 0; i < plane; ++i) {
            double sq = 0;
            for (int64_t k = c0; k <= c1; ++k) {
              const double v = static_cast<double>(static_cast<C>(xp[(n * channels + k) * plane + i]));
              sq += v * v;
            }
            const double v = static_cast<double>(static_cast<C>(xp[q * plane + i]));
            const double denominator = std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
            yp[q * plane + i] = static_cast<T>(static_cast<C>(v / denominator));
          }
        }
        return {};
      });
    });
  });
}

// --- MeanVarianceNormalization ------------------------------------------------------------

KernelFactory mvn_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const std::vector<int64_t> axes_attr = info.attr_ints("axes", {0, 2, 3});
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      const int64_t rank = static_cast<int64_t>(x->rank());
      std::vector<bool> reduced(x->rank(), false);
      for (int64_t a : axes_attr) {
        ONNXKIT_ASSIGN(int64_t axis, normalize_axis(a, rank, "axes value"));
        if (reduced[static_cast<size_t>(axis)]) return make_error("axes lists axis {} twice", axis);
        reduced[static_cast<size_t>(axis)] = true;
      }
      // Each element belongs to the group of its kept coordinates.
      std::vector<int64_t> group_stride(x->rank(), 0);
      int64_t groups = 1;
      for (size_t d = x->rank(); d-- > 0;)
        if (!reduced[d]) {
          group_stride[d] = groups;
          groups *= x->dim(d);
        }
      const int64_t total = x->numel();
      const int64_t per_group = groups > 0 ? total / groups : 0;
      std::vector<int64_t> group_of(static_cast<size_t>(total));
      {
        std::vector<int64_t> index(x->rank(), 0);
        for (int64_t i = 0; i < total; ++i) {
          int64_t g = 0;
          for (size_t d = 0; d < index.size(); ++d) g += index[d] * group_stride[d];
          group_of[static_cast<size_t>(i)] = g;
          for (size_t d = index.size(); d-- > 0;) {
            if (++index[d] < x->dim(d)) break;
            index[d] = 0;
          }
        }
      }
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
        std::vector<double> mean(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0);
        for (int64_t i = 0; i < total; ++i) mean[static_cast<size_t>(group_of[i])] += static_cast<double>(static_cast<C>(xp[i]));
        for (double& m : mean) m /= static_cast<double>(std::max<int64_t>(per_group, 1));
        for (int64_t i = 0; i < total; ++i) {
          const double d = static_cast<double>(static_cast<C>(xp[i])) - mean[static_cast<size_t>(group_of[i])];
          sq[static_cast<size_t>(group_of[i])] += d * d;
        }
        // The spec's function adds 1e-9 to the standard deviation.
        std::vector<double> inv(static_cast<size_t>(groups));
        for (size_t g = 0; g < inv.size(); ++g)
          inv[g] = 1.0 / (std::sqrt(sq[g] / static_cast<double>(std::max<int64_t>(per_group, 1))) + 1e-9);
        for (int64_t i = 0; i < total; ++i) {
          const size_t g = static_cast<size_t>(group_of[i]);
          yp[i] = static_cast<T>(static_cast<C>((static_cast<double>(static_cast<C>(xp[i])) - mean[g]) * inv[g]));
        }
        return {};
      });
    });
  });
}

// --- LpNormalization -----------------------------------------------------------------------

KernelFactory lp_norm_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const int64_t axis_attr = info.attr_int("axis", -1);
    const int64_t p = info.attr_int("p", 2);
    if (p != 1 && p != 2) return make_error("p is {}, must be 1 or 2", p);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, static_cast<int64_t>(x->rank()), "axis"));
      const int64_t outer = dims_product(x->shape(), 0, static_cast<size_t>(axis)), n = x->dim(static_cast<size_t>(axis));
      const int64_t inner = dims_product(x->shape(), static_cast<size_t>(axis) + 1, x->rank());
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
#pragma omp parallel for if (x->numel() >= kParallelWork && outer * inner > 1) schedule(static)
        for (int64_t q = 0; q < outer * inner; ++q) {
          const int64_t base = (q / inner) * n * inner + q % inner;
          double norm = 0;
          for (int64_t i = 0; i < n; ++i) {
            const double v = static_cast<double>(static_cast<C>(xp[base + i * inner]));
            norm += p == 1 ? std::abs(v) : v * v;
          }
          if (p == 2) norm = std::sqrt(norm);
          // A zero vector stays zero rather than turning into NaNs.
          const double inv = norm > 0 ? 1.0 / norm : 0.0;
          for (int64_t i = 0; i < n; ++i) {
            const double v = static_cast<double>(static_cast<C>(xp[base + i * inner]));
            yp[base + i * inner] = static_cast<T>(static_cast<C>(v * inv));
          }
        }
        return {};
      });
    });
  });
}

}  // namespace

void register_normalization(KernelRegistry& r) {
  // One BatchNormalization kernel reads the attributes each version has
  // (is_test before 7, spatial before 9, training_mode from 14).
  r.add("", "BatchNormalization", 1, kLatestOpset, batch_norm_kernel(),
        {.blocked = OpTraits::Blocked::own_kernel});  // inference on blocked activations: blocked.h
  r.add("", "InstanceNormalization", 1, kLatestOpset, instance_norm_kernel());
  r.add("", "LayerNormalization", 17, kLatestOpset, layer_norm_kernel(/*residual=*/false));
  r.add("", "RMSNormalization", 23, kLatestOpset, rms_norm_kernel());
  r.add("", "GroupNormalization", 18, 20, group_norm_kernel(false));
  r.add("", "GroupNormalization", 21, kLatestOpset, group_norm_kernel(true));
  r.add("", "LRN", 1, kLatestOpset, lrn_kernel());
  r.add("", "MeanVarianceNormalization", 9, kLatestOpset, mvn_kernel());
  r.add("", "LpNormalization", 1, kLatestOpset, lp_norm_kernel());
}

}  // namespace onnxkit::runtime::nn
