// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is seen as a 2-D
// matrix [prod(dims before axis), prod(dims from axis)] and each row is
// normalized; from 13 the op runs along the one axis.

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {
namespace {

enum class Mode { softmax, log_softmax, hardmax };

// x and y viewed as [outer, n, inner]; the op runs along n.
template <class T, Mode kMode> void softmax_compute(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  if (outer == 0 || n == 0 || inner == 0) return;
  const bool parallel = outer > 1 && outer * n * inner >= kParallelWork;
  if (inner == 1) {
#pragma omp parallel for if (parallel) schedule(static)
    for (int64_t r = 0; r < outer; ++r) {
      const T* in = x + r * n;
      T* out = y + r * n;
      if constexpr (kMode == Mode::hardmax) {
        int64_t best = 0;
        for (int64_t i = 1; i < n; ++i)
          if (static_cast<C>(in[i]) > static_cast<C>(in[best])) best = i;
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(C(i == best ? 1 : 0));
      } else if constexpr (kMode == Mode::softmax && std::is_same_v<T, float>) {
        softmax_floats(in, out, n);
      } else {
        C max = -std::numeric_limits<C>::infinity();
        for (int64_t i = 0; i < n; ++i) max = std::max(max, static_cast<C>(in[i]));
        // Subtracting the row's max keeps exp from overflowing.
        double sum = 0;
        if constexpr (kMode == Mode::softmax) {
          for (int64_t i = 0; i < n; ++i) {
            const C e = std::exp(static_cast<C>(in[i]) - max);
            out[i] = static_cast<T>(e);
            sum += static_cast<double>(e);
          }
          const C inv = static_cast<C>(1.0 / sum);
          for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<C>(out[i]) * inv);
        } else {
          for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(std::exp(static_cast<C>(in[i]) - max));
          // (x - max) first: folding max and log(sum) into one shift would round
          // away the small log-probabilities of the largest elements.
          const C log_sum = static_cast<C>(std::log(sum));
          for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>((static_cast<C>(in[i]) - max) - log_sum);
        }
      }
    }
    return;
  }
  // Along a non-innermost axis: the `inner` columns of a block go together.
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t r = 0; r < outer; ++r) {
    const T* in = x + r * n * inner;
    T* out = y + r * n * inner;
    std::vector<C> best(static_cast<size_t>(inner), -std::numeric_limits<C>::infinity());
    std::vector<double> sum(static_cast<size_t>(inner), 0.0);
    if constexpr (kMode == Mode::hardmax) {
      std::vector<int64_t> at(static_cast<size_t>(inner), 0);
      for (int64_t j = 0; j < inner; ++j) best[j] = static_cast<C>(in[j]);
      for (int64_t i = 1; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) {
          const C v = static_cast<C>(in[i * inner + j]);
          if (v > best[j]) {
            best[j] = v;
            at[j] = i;
          }
        }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) out[i * inner + j] = static_cast<T>(C(at[j] == i ? 1 : 0));
    } else {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) best[j] = std::max(best[j], static_cast<C>(in[i * inner + j]));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) {
          const C e = std::exp(static_cast<C>(in[i * inner + j]) - best[j]);
          if constexpr (kMode == Mode::softmax) out[i * inner + j] = static_cast<T>(e);
          sum[j] += static_cast<double>(e);
        }
      for (int64_t j = 0; j < inner; ++j) {
        if constexpr (kMode == Mode::softmax) sum[j] = 1.0 / sum[j];
        else sum[j] = std::log(sum[j]);
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) {
          if constexpr (kMode == Mode::softmax)
            out[i * inner + j] = static_cast<T>(static_cast<C>(static_cast<C>(out[i * inner + j]) * static_cast<C>(sum[j])));
          else
            out[i * inner + j] =
                static_cast<T>(static_cast<C>((static_cast<C>(in[i * inner + j]) - best[j]) - static_cast<C>(sum[j])));
        }
    }
  }
}

template <Mode kMode> KernelFactory softmax_kernel(bool coerce_2d) {
  return make_kernel([coerce_2d](const KernelInfo& info) -> Result<ComputeFn> {
    const int64_t axis_attr = info.attr_int("axis", coerce_2d ? 1 : -1);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      const int64_t rank = static_cast<int64_t>(x->rank());
      int64_t axis;
      if (coerce_2d && axis_attr == rank) {
        axis = rank;  // every element is a row of its own
      } else {
        ONNXKIT_ASSIGN(axis, normalize_axis(axis_attr, rank, "axis"));
      }
      const size_t a = static_cast<size_t>(axis);
      const int64_t outer = dims_product(x->shape(), 0, a);
      const int64_t n = coerce_2d ? dims_product(x->shape(), a, x->rank()) : x->dim(a);
      const int64_t inner = coerce_2d ? 1 : dims_product(x->shape(), a + 1, x->rank());
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        softmax_compute<T, kMode>(x->data<T>(), y.mutable_data<T>(), outer, n, inner);
        return {};
      });
    });
  });
}

}  // namespace

Status log_softmax_along(const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& y) {
  return dispatch_float(x.dtype(), [&]<class T>() -> Status {
    softmax_compute<T, Mode::log_softmax>(x.data<T>(), y.mutable_data<T>(), outer, n, inner);
    return {};
  });
}

void register_softmax(KernelRegistry& r) {
  r.add("", "Softmax", 1, 12, softmax_kernel<Mode::softmax>(true));
  r.add("", "Softmax", 13, kLatestOpset, softmax_kernel<Mode::softmax>(false));
  r.add("", "LogSoftmax", 1, 12, softmax_kernel<Mode::log_softmax>(true));
  r.add("", "LogSoftmax", 13, kLatestOpset, softmax_kernel<Mode::log_softmax>(false));
  r.add("", "Hardmax", 1, 12, softmax_kernel<Mode::hardmax>(true));
  r.add("", "Hardmax", 13, kLatestOpset, softmax_kernel<Mode::hardmax>(false));
}

}  // namespace onnxkit::runtime::nn
