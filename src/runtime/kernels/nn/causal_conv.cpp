// CausalConvWithState (opset 27): a depthwise 1-D convolution that sees only
// the current and past positions, carrying the last k - 1 inputs from one
// call to the next (Mamba's and Gated DeltaNet's decode step).
//
// With P = past_state (zeros when absent) followed by the input along the
// length, [B, C, k - 1 + L]:
//   output[b, c, t]        = act(bias[c] + sum_j weight[c, 0, j] * P[b, c, t + j])
//   present_state[b, c, i] = P[b, c, L + i]   (the last k - 1 positions of P)
// act is SiLU (x * sigmoid(x)) for 'silu' or 'swish', the identity for 'none'.

#include <cmath>

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {
namespace {

KernelFactory causal_conv_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const std::string activation = info.attr_string("activation", "none");
    if (activation != "none" && activation != "silu" && activation != "swish")
      return make_error("attribute 'activation' is '{}'; it must be none, silu or swish", activation);
    const bool silu = activation != "none";
    return ComputeFn([silu](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(1));
      if (x->rank() != 3) return make_error("input must be [batch, channels, length], got {}", shape_to_string(x->shape()));
      const int64_t batch = x->dim(0), channels = x->dim(1), length = x->dim(2);
      if (w->rank() != 3 || w->dim(0) != channels || w->dim(1) != 1 || w->dim(2) < 1)
        return make_error("weight must be [channels, 1, k] = [{}, 1, k] with k >= 1, got {}", channels,
                          shape_to_string(w->shape()));
      const int64_t k = w->dim(2), carry = k - 1;
      const Tensor* bias = nullptr;
      if (ctx.has_input(2)) {
        ONNXKIT_ASSIGN(bias, ctx.tensor(2));
        if (bias->shape() != Shape{channels})
          return make_error("bias must be [channels] = [{}], got {}", channels, shape_to_string(bias->shape()));
      }
      const Tensor* past = nullptr;
      if (ctx.has_input(3)) {
        ONNXKIT_ASSIGN(past, ctx.tensor(3));
        if (past->shape() != Shape{batch, channels, carry})
          return make_error("past_state must be [batch, channels, k - 1] = [{}, {}, {}], got {}", batch, channels, carry,
                            shape_to_string(past->shape()));
      }
      for (const Tensor* t : {w, bias, past})
        if (t != nullptr && t->dtype() != x->dtype())
          return make_error("weight, bias and past_state must have the input's element type {}, got {}", to_string(x->dtype()),
                            to_string(t->dtype()));
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      Tensor* present = ctx.wants_output(1) ? &ctx.output(1, x->dtype(), {batch, channels, carry}) : nullptr;
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        const T* wp = w->data<T>();
#pragma omp parallel for collapse(2) if (x->numel() * k >= kParallelWork) schedule(static)
        for (int64_t b = 0; b < batch; ++b) {
          for (int64_t c = 0; c < channels; ++c) {
            // P of this (b, c): the carried positions, then the input.
            std::vector<C> p(static_cast<size_t>(carry + length), C(0));
            if (past != nullptr)
              for (int64_t i = 0; i < carry; ++i)
                p[static_cast<size_t>(i)] = static_cast<C>(past->data<T>()[(b * channels + c) * carry + i]);
            const T* xr = xp + (b * channels + c) * length;
            for (int64_t t = 0; t < length; ++t) p[static_cast<size_t>(carry + t)] = static_cast<C>(xr[t]);
            const T* wr = wp + c * k;
            const C offset = bias != nullptr ? static_cast<C>(bias->data<T>()[c]) : C(0);
            T* yr = y.mutable_data<T>() + (b * channels + c) * length;
            for (int64_t t = 0; t < length; ++t) {
              C sum = offset;
              for (int64_t j = 0; j < k; ++j) sum += static_cast<C>(wr[j]) * p[static_cast<size_t>(t + j)];
              if (silu) sum = sum / (C(1) + std::exp(-sum));
              yr[t] = static_cast<T>(sum);
            }
            if (present != nullptr) {
              T* sr = present->mutable_data<T>() + (b * channels + c) * carry;
              for (int64_t i = 0; i < carry; ++i) sr[i] = static_cast<T>(p[static_cast<size_t>(length + i)]);
            }
          }
        }
        return {};
      });
    });
  });
}

}  // namespace

void register_causal_conv(KernelRegistry& r) { r.add("", "CausalConvWithState", 27, kLatestOpset, causal_conv_kernel()); }

}  // namespace onnxkit::runtime::nn
