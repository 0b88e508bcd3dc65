// A chain of element-wise nodes run as one kernel (ChainSpec, built by
// runtime/fusion.h): one pass over the elements, no tensor between the
// nodes, one step of the plan instead of several. Each op computes what its
// node's kernel does (the same formulas, float32's vectorized sigmoid and tanh), so
// fusing changes no bit of the result.

#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/fast_math.h"

namespace onnxkit::runtime::elementwise {
namespace {

using Op = ChainStep::Op;

// `step` on v, with `other` the operand of add..div.
template <class C> C apply(const ChainStep& step, C v, C other) {
  const C a = step.operand_first ? other : v, b = step.operand_first ? v : other;
  switch (step.op) {
    case Op::relu: return v > C(0) ? v : C(0);
    case Op::sigmoid: return v >= C(0) ? C(1) / (C(1) + std::exp(-v)) : std::exp(v) / (C(1) + std::exp(v));
    case Op::tanh: return std::tanh(v);
    case Op::neg: return -v;
    case Op::abs: return v < C(0) ? -v : v;
    case Op::add: return a + b;
    case Op::sub: return a - b;
    case Op::mul: return a * b;
    case Op::div: return a / b;
  }
  return v;
}

// out[i] = step(in[i], other[i] or its constant) for i < n: a loop per op,
// so that each vectorizes.
void step_floats(const ChainStep& step, const float* in, const float* other, float* out, int64_t n) {
  auto each = [&](auto f) {
    if (other != nullptr) {
      for (int64_t i = 0; i < n; ++i) out[i] = f(in[i], other[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = f(in[i], step.constant);
    }
  };
  // The operands in the node's order: a NaN's payload depends on it.
  auto ordered = [&](auto f) {
    if (step.operand_first) each([f](float v, float w) { return f(w, v); });
    else each(f);
  };
  switch (step.op) {
    case Op::sigmoid: sigmoid_floats(in, out, n); return;  // as the Sigmoid kernel computes float32
    case Op::relu: each([](float v, float) { return v > 0.0f ? v : 0.0f; }); return;
    case Op::tanh: tanh_floats(in, out, n); return;  // as the Tanh kernel computes float32
    case Op::neg: each([](float v, float) { return -v; }); return;
    case Op::abs: each([](float v, float) { return v < 0.0f ? -v : v; }); return;
    case Op::add: ordered([](float a, float b) { return a + b; }); return;
    case Op::sub: ordered([](float a, float b) { return a - b; }); return;
    case Op::mul: ordered([](float a, float b) { return a * b; }); return;
    case Op::div: ordered([](float a, float b) { return a / b; }); return;
  }
}

// The chain over [begin, end) of float32 x into y, in blocks that stay in
// cache.
void chain_floats(const ChainSpec& spec, const float* x, const float* other, float* y, int64_t begin, int64_t end) {
  constexpr int64_t kBlock = 256;
  float buf[kBlock];
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t m = std::min(kBlock, end - b);
    const float* in = x + b;
    for (const ChainStep& step : spec.steps) {
      step_floats(step, in, nullptr, buf, m);
      in = buf;
    }
    if (spec.with_tensor) step_floats(*spec.with_tensor, in, other + b, y + b, m);
    else std::copy_n(in, m, y + b);
  }
}

// The same for the other float types, rounding to T after every step.
template <class T> void chain_any(const ChainSpec& spec, const T* x, const T* other, T* y, int64_t begin, int64_t end) {
  using C = compute_t<T>;
  for (int64_t i = begin; i < end; ++i) {
    C v = static_cast<C>(x[i]);
    for (const ChainStep& step : spec.steps) v = static_cast<C>(static_cast<T>(apply(step, v, static_cast<C>(step.constant))));
    if (spec.with_tensor) v = apply(*spec.with_tensor, v, static_cast<C>(other[i]));
    y[i] = static_cast<T>(v);
  }
}

template <class T> void run_chain(const ChainSpec& spec, const Tensor& x, const Tensor* other, Tensor& y, int64_t n) {
  const T* px = x.data<T>();
  const T* po = other != nullptr ? other->data<T>() : nullptr;
  T* py = y.mutable_data<T>();
  parallel_ranges(n, n >= kParallelWork, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) chain_floats(spec, px, po, py, begin, end);
    else chain_any<T>(spec, px, po, py, begin, end);
  });
}

Status compute_chain(const ChainSpec& spec, KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  const Tensor* other = nullptr;
  if (spec.with_tensor) {
    ONNXKIT_ASSIGN(other, ctx.tensor(1));
    if (other->dtype() != x->dtype())
      return make_error("inputs have different element types ({} and {})", to_string(x->dtype()), to_string(other->dtype()));
  }
  Shape shape = spec.lifts_rank_0 && x->rank() == 0 ? Shape{1} : x->shape();
  return dispatch_float(x->dtype(), [&]<class T>() -> Status {
    if (other == nullptr || other->shape() == shape) {
      Tensor& y = ctx.output(0, x->dtype(), shape);
      run_chain<T>(spec, *x, other, y, y.numel());
      return {};
    }
    // The second tensor broadcasts: the steps first, then the last op as
    // the binary kernels broadcast it.
    ChainSpec steps_only{spec.steps, std::nullopt, false};
    Tensor t(x->dtype(), shape);
    run_chain<T>(steps_only, *x, nullptr, t, t.numel());
    ONNXKIT_ASSIGN(Shape out_shape, binary_shape(t, *other));
    Tensor& y = ctx.output(0, x->dtype(), std::move(out_shape));
    const ChainStep last = *spec.with_tensor;
    using C = compute_t<T>;
    map_binary<T, T, T>(t, *other, y, [last](C v, C w) { return static_cast<T>(apply(last, v, w)); });
    return {};
  });
}

}  // namespace

KernelFactory chain_kernel(ChainSpec spec) {
  return make_kernel([spec = std::move(spec)](KernelContext& ctx) { return compute_chain(spec, ctx); });
}

}  // namespace onnxkit::runtime::elementwise
