#pragma once
// Shared machinery of the element-wise family: maps over one tensor and
// broadcasting maps over two or three, parallel when large.

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "runtime/broadcast.h"
#include "runtime/kernels/common.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::elementwise {

template <class T> constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// Traits (kernel.h) of the element-wise ops that run on blocked activations
// as they are: on input 0 (`unary`) or inputs 0 and 1 (`binary`), mapping
// zero to zero or not.
inline constexpr OpTraits kBlockedUnary{.blocked = OpTraits::Blocked::elementwise_unary};
inline constexpr OpTraits kBlockedUnaryZeroPreserving{.blocked = OpTraits::Blocked::elementwise_unary, .zero_preserving = true};
inline constexpr OpTraits kBlockedBinaryZeroPreserving{.blocked = OpTraits::Blocked::elementwise_binary, .zero_preserving = true};

// Binary ops do less work per element: below this, waking a second thread
// costs more than it saves (measured on BERT's [128, 256] bias adds).
inline constexpr int64_t kParallelBinaryElements = 1 << 17;

// body(begin, end) over [0, n) in one chunk per thread when n is at least
// `parallel_from`.
template <class Body> void map_chunks(int64_t n, Body body, int64_t parallel_from = kParallelWork) {
  parallel_ranges(n, n >= parallel_from, body);
}

// out[i] = f(in[i]) over every element.
template <class In, class Out, class F> void map_unary(const Tensor& in, Tensor& out, F f) {
  const In* x = in.data<In>();
  Out* y = out.mutable_data<Out>();
  map_chunks(in.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = static_cast<Out>(f(static_cast<compute_t<In>>(x[i])));
  });
}

// True when `inner`, leading 1s aside, is the last dims of `outer`: a bias
// added to every row.
inline bool is_trailing_block(const Shape& inner, const Shape& outer) {
  size_t skip = 0;
  while (skip < inner.size() && inner[skip] == 1) ++skip;
  const size_t rank = inner.size() - skip;
  if (rank > outer.size()) return false;
  return std::equal(inner.begin() + static_cast<std::ptrdiff_t>(skip), inner.end(),
                    outer.end() - static_cast<std::ptrdiff_t>(rank));
}

// How `part` broadcast to `out` repeats: each of its rows of `inner`
// elements over `repeated` rows of out, for `outer` such groups. A
// squeeze-excitation gate [N, C, 1, 1] over [N, C, H, W] is (N*C, H*W, 1);
// over blocked activations, [N, C/16, 1, 1, 16] over [N, C/16, H, W, 16],
// (N*C/16, H*W, 16): runs of 16 that the general walk pays a visit each for.
struct MiddleBroadcast {
  int64_t outer = 1, repeated = 1, inner = 1;
};

// The MiddleBroadcast of `part` to `out`, when part's broadcast dims (dims
// of 1 where out's are not) are contiguous; nullopt otherwise or when none.
inline std::optional<MiddleBroadcast> middle_broadcast(const Shape& part, const Shape& out) {
  if (part.size() > out.size()) return std::nullopt;
  const size_t lead = out.size() - part.size();
  MiddleBroadcast m;
  enum { before, within, after } at = before;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    const bool repeats = d < lead || part[d - lead] == 1;
    if (repeats && at == after) return std::nullopt;
    if (repeats) at = within;
    else if (at == within) at = after;
    (at == before ? m.outer : at == within ? m.repeated : m.inner) *= out[d];
  }
  if (at == before) return std::nullopt;
  return m;
}

// out[o, r, i] = f(whole[o, r, i], part[o, i]) over m's dims, f taking the
// operands in the order `Whole` / `Part` give (see map_binary).
template <class Whole, class Part, class Out, class F>
void map_middle_broadcast(const Whole* whole, const Part* part, Out* out, const MiddleBroadcast& m, F f) {
  const int64_t n = m.outer * m.repeated * m.inner;
  if (m.inner == 1) {  // one gate value per row: split the elements, not the (maybe few) rows
    auto elements = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end;) {
        const int64_t o = i / m.repeated, stop = std::min(end, (o + 1) * m.repeated);
        const Part g = part[o];
        for (; i < stop; ++i) out[i] = f(whole[i], g);
      }
    };
    map_chunks(n, elements, kParallelBinaryElements);
    return;
  }
  // A division per run of repeated rows, not per row: a blocked gate's rows
  // are 8 or 16 floats, and dividing cost more than multiplying them.
  parallel_ranges(m.outer * m.repeated, n >= kParallelBinaryElements, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end;) {
      const int64_t o = row / m.repeated, stop = std::min(end, (o + 1) * m.repeated);
      const Part* g = part + o * m.inner;
      for (; row < stop; ++row) {
        const Whole* x = whole + row * m.inner;
        Out* z = out + row * m.inner;
        for (int64_t i = 0; i < m.inner; ++i) z[i] = f(x[i], g[i]);
      }
    }
  });
}

// out = f(a, b) with broadcasting, into `out` of the broadcast shape. The
// common cases (same shapes, a scalar, a row broadcast over rows, a per-row
// or per-channel operand) run flat and in parallel when large; the rest walk
// the broadcast runs.
template <class A, class B, class Out, class F> void map_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out.mutable_data<Out>();
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  const int64_t n = out.numel(), na = a.numel(), nb = b.numel();
  const bool worth_threads = n >= kParallelBinaryElements;
  if (na == n && nb == n) {
    parallel_ranges(n, worth_threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = static_cast<Out>(f(CA(pa[i]), CB(pb[i])));
    });
    return;
  }
  // One operand a single value (x + eps): as a trailing block it would be
  // a loop of one element per row.
  if (na == n && nb == 1) {
    const CB y = CB(pb[0]);
    parallel_ranges(n, worth_threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = static_cast<Out>(f(CA(pa[i]), y));
    });
    return;
  }
  if (nb == n && na == 1) {
    const CA x = CA(pa[0]);
    parallel_ranges(n, worth_threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = static_cast<Out>(f(x, CB(pb[i])));
    });
    return;
  }
  if (na == n && nb > 0 && is_trailing_block(b.shape(), out.shape())) {
    parallel_ranges(n / nb, worth_threads, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const A* x = pa + r * nb;
        Out* z = po + r * nb;
        for (int64_t i = 0; i < nb; ++i) z[i] = static_cast<Out>(f(CA(x[i]), CB(pb[i])));
      }
    });
    return;
  }
  if (nb == n && na > 0 && is_trailing_block(a.shape(), out.shape())) {
    parallel_ranges(n / na, worth_threads, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const B* y = pb + r * na;
        Out* z = po + r * na;
        for (int64_t i = 0; i < na; ++i) z[i] = static_cast<Out>(f(CA(pa[i]), CB(y[i])));
      }
    });
    return;
  }
  if (na == n && nb > 0) {
    if (auto m = middle_broadcast(b.shape(), out.shape())) {
      map_middle_broadcast(pa, pb, po, *m, [&](A x, B y) { return static_cast<Out>(f(CA(x), CB(y))); });
      return;
    }
  }
  if (nb == n && na > 0) {
    if (auto m = middle_broadcast(a.shape(), out.shape())) {
      map_middle_broadcast(pb, pa, po, *m, [&](B y, A x) { return static_cast<Out>(f(CA(x), CB(y))); });
      return;
    }
  }
  for_each_broadcast_run<2>(out.shape(), {&a.shape(), &b.shape()},
                            [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& step, int64_t n) {
                              const A* x = pa + off[0];
                              const B* y = pb + off[1];
                              Out* z = po + o;
                              if (step[0] == 1 && step[1] == 1) {
                                for (int64_t i = 0; i < n; ++i) z[i] = static_cast<Out>(f(CA(x[i]), CB(y[i])));
                              } else if (step[0] == 1 && step[1] == 0) {
                                const CB yv = CB(y[0]);
                                for (int64_t i = 0; i < n; ++i) z[i] = static_cast<Out>(f(CA(x[i]), yv));
                              } else if (step[0] == 0 && step[1] == 1) {
                                const CA xv = CA(x[0]);
                                for (int64_t i = 0; i < n; ++i) z[i] = static_cast<Out>(f(xv, CB(y[i])));
                              } else {
                                for (int64_t i = 0; i < n; ++i)
                                  z[i] = static_cast<Out>(f(CA(x[i * step[0]]), CB(y[i * step[1]])));
                              }
                            });
}

// Broadcast shape of two inputs, for kernels that allocate their output.
inline Result<Shape> binary_shape(const Tensor& a, const Tensor& b) { return broadcast_shapes({&a.shape(), &b.shape()}); }

// Registration helpers used by the family's files.
void register_unary(KernelRegistry& registry);
void register_binary(KernelRegistry& registry);
void register_activations(KernelRegistry& registry);

// Gelu (opset 20), exact or tanh form per the node's 'approximate'; also the
// kernel the session runs in place of torch's five-node GELU (runtime/fusion.h).
KernelFactory gelu_kernel();
void register_variadic(KernelRegistry& registry);

// One op of an element-wise chain (ChainSpec): a unary op, or an arithmetic
// op with a constant scalar or, last in the chain, with a second tensor.
struct ChainStep {
  enum class Op : uint8_t { relu, sigmoid, tanh, neg, abs, add, sub, mul, div };
  Op op = Op::relu;
  float constant = 0;          // the other operand of add..div, unless it is the tensor
  bool operand_first = false;  // c - x, c / x: the other operand on the left
};

// x through `steps`, then through `with_tensor` and input 1 when set: the
// kernel the session runs in place of a chain of element-wise nodes
// (runtime/fusion.h), in one pass over the elements. The steps of a float
// input round to its type between steps, as the nodes would.
struct ChainSpec {
  std::vector<ChainStep> steps;
  std::optional<ChainStep> with_tensor;
  // A constant of shape [1] makes a rank-0 x rank 1, as broadcasting would.
  bool lifts_rank_0 = false;
};
KernelFactory chain_kernel(ChainSpec spec);

}  // namespace onnxkit::runtime::elementwise
