#pragma once
// Shared machinery of the reduce family: which axes a node reduces, and one
// engine that folds any set of axes with any reduction.
//
// The input's dims are merged into alternating runs of kept and reduced
// dims (size-1 dims dropped). When the innermost run is reduced, every output
// folds contiguous runs of it; when it is kept, contiguous output rows fold
// input rows element by element. Both inner loops are vectorizable, and the
// outputs (or, when there are few, the reduced elements) are split across
// threads.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "runtime/kernels/common.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::reduce {

// The axes of a Reduce node: an attribute before the opset where they became
// an input (13 for ReduceSum, 18 for the others).
struct AxesSpec {
  bool from_input = false;
  std::vector<int64_t> attribute;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
};

// Per input dim, whether it is reduced: the given axes, all of them when
// none are given, none when none are given and noop_with_empty_axes is set.
// Errors name the offending axis.
Result<std::vector<bool>> reduced_axes(const KernelContext& ctx, const AxesSpec& spec, int64_t rank);

struct Layout {
  Shape out_shape;
  int64_t outputs = 1;  // elements of the output
  int64_t count = 1;    // input elements folded into each
  bool inner_reduced = false;
  int64_t inner = 1;  // size of the innermost merged dim (stride 1)
  // Outer merged dims (the innermost excluded) with their input strides.
  std::vector<int64_t> kept_dims, kept_strides;
  std::vector<int64_t> reduced_dims, reduced_strides;
  // Input offsets of every combination of the outer reduced dims.
  std::vector<int64_t> reduced_offsets;
};

Layout make_layout(const Shape& in, const std::vector<bool>& reduced, bool keepdims);

// Walks outer kept dims in row-major order, tracking the input offset.
struct Odometer {
  const std::vector<int64_t>& dims;
  const std::vector<int64_t>& strides;
  std::vector<int64_t> index;
  int64_t offset = 0;

  Odometer(const std::vector<int64_t>& d, const std::vector<int64_t>& s, int64_t start)
      : dims(d), strides(s), index(d.size(), 0) {
    for (size_t i = d.size(); i-- > 0;) {
      index[i] = start % d[i];
      start /= d[i];
      offset += index[i] * s[i];
    }
  }
  void next() {
    for (size_t i = dims.size(); i-- > 0;) {
      offset += strides[i];
      if (++index[i] < dims[i]) return;
      offset -= strides[i] * dims[i];
      index[i] = 0;
    }
  }
};

// The two hot loops, kept out of line: inside the engine's big parallel
// regions the compiler gives up vectorizing them.

// acc[i] = fold of acc[i] and p[i], for outputs o.. o + w.
template <class In, class Op>
__attribute__((noinline)) void fold_row(typename Op::Acc* __restrict acc, const In* __restrict p, int64_t w, int64_t o,
                                        const Op& op) {
  for (int64_t i = 0; i < w; ++i) acc[i] = op.step(acc[i], p[i], o + i);
}

// A contiguous run folded into one accumulator, in 16 lanes so that the
// loop vectorizes without reordering a single chain.
template <class In, class Op>
__attribute__((noinline)) typename Op::Acc fold_run(const In* __restrict p, int64_t n, int64_t o, typename Op::Acc acc,
                                                    const Op& op) {
  using Acc = typename Op::Acc;
  constexpr int kLanes = 16;
  if (n >= 2 * kLanes) {
    Acc lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) lanes[l] = op.init();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      // Kept a loop: fully unrolled, the lanes go to the straight-line
      // vectorizer, which gives up on selects (max, min) and runs scalar.
#pragma GCC unroll 1
      for (int l = 0; l < kLanes; ++l) lanes[l] = op.step(lanes[l], p[i + l], o);
    }
    for (; i < n; ++i) lanes[0] = op.step(lanes[0], p[i], o);
    for (int l = 0; l < kLanes; ++l) acc = op.merge(acc, lanes[l]);
    return acc;
  }
  for (int64_t i = 0; i < n; ++i) acc = op.step(acc, p[i], o);
  return acc;
}

// Folds x into out[o] = op.finish(fold of op.step over the elements of o, o).
// Op has: using Acc; Acc init() const; Acc step(Acc, In, int64_t o) const;
// Acc merge(Acc, Acc) const; Out finish(Acc, int64_t o) const.
template <class In, class Out, class Op> void run(const Layout& L, const In* x, Out* out, const Op& op) {
  using Acc = typename Op::Acc;
  const int64_t total = L.outputs * L.count;
  const int threads = total >= kParallelWork ? available_threads() : 1;
  if (L.outputs == 0) return;
  if (L.count == 0) {
    for (int64_t o = 0; o < L.outputs; ++o) out[o] = op.finish(op.init(), o);
    return;
  }
  const int64_t combos = static_cast<int64_t>(L.reduced_offsets.size());

  if (L.inner_reduced) {
    // out[o] folds combos runs of L.inner elements.
    if (threads == 1 || L.outputs >= 2 * threads) {
      const int64_t chunks = std::min<int64_t>(threads, L.outputs);
      const int64_t per = (L.outputs + chunks - 1) / chunks;
      for_each_chunk(chunks, [&](int64_t t) {
        const int64_t first = t * per, last = std::min(L.outputs, first + per);
        if (first >= last) return;
        Odometer kept(L.kept_dims, L.kept_strides, first);
        for (int64_t o = first; o < last; ++o, kept.next()) {
          Acc acc = op.init();
          for (int64_t c = 0; c < combos; ++c) acc = fold_run(x + kept.offset + L.reduced_offsets[c], L.inner, o, acc, op);
          out[o] = op.finish(acc, o);
        }
      });
      return;
    }
    // Few outputs: the elements of each are split, partial folds merged.
    // Not std::vector: Acc may be bool, whose packed bits threads cannot share.
    std::unique_ptr<Acc[]> partial(new Acc[threads]);
    for (int64_t o = 0; o < L.outputs; ++o) {
      Odometer kept(L.kept_dims, L.kept_strides, o);
      const In* base = x + kept.offset;
      const int64_t span = combos * L.inner;
      const int64_t per = (span + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) {
        Acc acc = op.init();
        int64_t e = t * per;
        const int64_t end = std::min(span, e + per);
        while (e < end) {
          const int64_t c = e / L.inner, i = e % L.inner;
          const int64_t n = std::min(L.inner - i, end - e);
          acc = fold_run(base + L.reduced_offsets[c] + i, n, o, acc, op);
          e += n;
        }
        partial[t] = acc;
      }
      Acc acc = op.init();
      for (int t = 0; t < threads; ++t) acc = op.merge(acc, partial[t]);
      out[o] = op.finish(acc, o);
    }
    return;
  }

  // Innermost kept: output rows of L.inner fold input rows.
  const int64_t rows = L.outputs / L.inner;
  const int64_t w = L.inner;
  auto fold_rows = [&](int64_t row, int64_t first_combo, int64_t last_combo, Acc* acc) {
    Odometer kept(L.kept_dims, L.kept_strides, row);
    const int64_t o = row * w;
    for (int64_t c = first_combo; c < last_combo; ++c) {
      fold_row(acc, x + kept.offset + L.reduced_offsets[c], w, o, op);
    }
  };
  if (threads == 1 || rows >= 2 * threads || combos < 2 * threads) {
    const int64_t chunks = std::min<int64_t>(threads, rows);
    const int64_t per = (rows + chunks - 1) / chunks;
    for_each_chunk(chunks, [&](int64_t t) {
      std::unique_ptr<Acc[]> acc(new Acc[w]);
      for (int64_t row = t * per; row < std::min(rows, (t + 1) * per); ++row) {
        std::fill(acc.get(), acc.get() + w, op.init());
        fold_rows(row, 0, combos, acc.get());
        for (int64_t i = 0; i < w; ++i) out[row * w + i] = op.finish(acc[i], row * w + i);
      }
    });
    return;
  }
  // Few rows: the combinations of each are split, partial rows merged.
  std::unique_ptr<Acc[]> partial(new Acc[threads * w]);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t per = (combos + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      Acc* acc = partial.get() + t * w;
      std::fill(acc, acc + w, op.init());
      fold_rows(row, std::min(combos, t * per), std::min(combos, (t + 1) * per), acc);
    }
    for (int64_t i = 0; i < w; ++i) {
      Acc acc = partial[i];
      for (int t = 1; t < threads; ++t) acc = op.merge(acc, partial[t * w + i]);
      out[row * w + i] = op.finish(acc, row * w + i);
    }
  }
}

// Family parts (register.cpp calls them).
void register_reductions(KernelRegistry& registry);
void register_arg(KernelRegistry& registry);

}  // namespace onnxkit::runtime::reduce
