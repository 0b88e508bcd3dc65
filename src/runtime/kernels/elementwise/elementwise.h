#pragma once
// Shared machinery of the element-wise family: maps over one tensor and
// broadcasting maps over two or three, parallel when large.

#include <cmath>
#include <type_traits>

#include "runtime/broadcast.h"
#include "runtime/kernel.h"

namespace onnxkit::runtime::elementwise {

// The type arithmetic happens in: float for the 16-bit floats.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

inline constexpr int64_t kParallelElements = 1 << 15;

// out[i] = f(in[i]) over every element.
template <class In, class Out, class F>
void map_unary(const Tensor& in, Tensor& out, F f) {
  const In* x = in.data<In>();
  Out* y = out.mutable_data<Out>();
  const int64_t n = in.numel();
#pragma omp parallel for if (n >= kParallelElements) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Out>(f(static_cast<compute_t<In>>(x[i])));
}

// out = f(a, b) with broadcasting; the output is allocated here.
template <class A, class B, class Out, class F>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out.mutable_data<Out>();
  for_each_broadcast_run<2>(out.shape(), {&a.shape(), &b.shape()},
                            [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& step, int64_t n) {
                              const A* x = pa + off[0];
                              const B* y = pb + off[1];
                              Out* z = po + o;
                              using CA = compute_t<A>;
                              using CB = compute_t<B>;
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
void register_variadic(KernelRegistry& registry);

}  // namespace onnxkit::runtime::elementwise
