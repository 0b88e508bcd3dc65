#pragma once
// Numpy broadcasting, in one place. Shapes align from the right; a dim of 1
// stretches. Kernels see the output as runs along its innermost dim, each
// run with a start offset and a step (0 or 1... in general any stride) per
// input, after adjacent dims that need no broadcasting are merged.

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"
#include "util/result.h"

namespace onnxkit::runtime {

// The broadcast of several shapes, or an error naming both incompatible dims.
Result<Shape> broadcast_shapes(const std::vector<const Shape*>& shapes);

// Strides (in elements) that read `shape` as if it had the shape `out`:
// 0 along dims that broadcast.
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out);

// Runs over `out` in row-major order: for every run of `length` elements
// along the merged innermost dim, calls visit(out_offset, offsets, steps,
// length), where offsets[k] is input k's first element and steps[k] its
// stride within the run. Runs are split across threads when the output is
// large.
template <size_t N, class Visit>
void for_each_broadcast_run(const Shape& out, const std::array<const Shape*, N>& inputs, Visit&& visit);

// The same walk with explicit strides (in elements, one vector per input,
// each as long as `out`): transposes, slices and tiles read this way.
template <size_t N, class Visit>
void for_each_strided_run(const Shape& out, std::array<std::vector<int64_t>, N> strides, Visit&& visit);

// --- implementation ----------------------------------------------------------

namespace detail {

struct Layout {
  std::vector<int64_t> dims;                  // merged output dims
  std::vector<std::vector<int64_t>> strides;  // per input, per merged dim
};

Layout merge_dims(const Shape& out, const std::vector<std::vector<int64_t>>& strides);

// Output elements below which one thread does all the work.
inline constexpr int64_t kParallelThreshold = 1 << 16;

}  // namespace detail

template <size_t N, class Visit>
void for_each_broadcast_run(const Shape& out, const std::array<const Shape*, N>& inputs, Visit&& visit) {
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) strides[k] = broadcast_strides(*inputs[k], out);
  for_each_strided_run<N>(out, std::move(strides), std::forward<Visit>(visit));
}

template <size_t N, class Visit>
void for_each_strided_run(const Shape& out, std::array<std::vector<int64_t>, N> strides, Visit&& visit) {
  detail::Layout layout = detail::merge_dims(out, std::vector<std::vector<int64_t>>(strides.begin(), strides.end()));
  const size_t rank = layout.dims.size();
  const int64_t total = shape_size(layout.dims);
  if (total == 0) return;
  const int64_t inner = rank == 0 ? 1 : layout.dims[rank - 1];
  const int64_t runs = total / inner;
  std::array<int64_t, N> steps{};
  for (size_t k = 0; k < N; ++k) steps[k] = rank == 0 ? 0 : layout.strides[k][rank - 1];

  auto run_range = [&](int64_t first, int64_t last) {
    // Index of run `first` in the outer dims, then counted up as runs go.
    std::vector<int64_t> index(rank > 0 ? rank - 1 : 0, 0);
    int64_t r = first;
    for (size_t d = index.size(); d-- > 0;) {
      index[d] = r % layout.dims[d];
      r /= layout.dims[d];
    }
    for (int64_t run = first; run < last; ++run) {
      std::array<int64_t, N> offsets{};
      for (size_t k = 0; k < N; ++k)
        for (size_t d = 0; d < index.size(); ++d) offsets[k] += index[d] * layout.strides[k][d];
      visit(run * inner, offsets, steps, inner);
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < layout.dims[d]) break;
        index[d] = 0;
      }
    }
  };
  if (total < detail::kParallelThreshold || runs == 1) {
    run_range(0, runs);
    return;
  }
#pragma omp parallel
  {
    int threads = 1, me = 0;
#ifdef _OPENMP
    threads = omp_get_num_threads();
    me = omp_get_thread_num();
#endif
    int64_t per = (runs + threads - 1) / threads;
    int64_t first = std::min<int64_t>(runs, me * per), last = std::min<int64_t>(runs, first + per);
    if (first < last) run_range(first, last);
  }
}

}  // namespace onnxkit::runtime
