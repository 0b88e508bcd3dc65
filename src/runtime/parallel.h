#pragma once
// Parallel loops whose bodies may themselves run parallel code (gemm,
// oneDNN primitives, another kernel).
//
// libgomp gives a parallel region opened inside another region fresh
// threads, created and joined on every entry, and it does so even when the
// outer region is inactive (`#pragma omp parallel if (false)` still opens a
// region of one thread). oneDNN, built on the same OpenMP, opens regions of
// its own. A recurrent step or a batched MatMul wrapped that way created two
// threads per product: an LSTM ran 200 times slower at 2 threads than at 1.
// So a loop that may call parallel code opens a region only when it uses
// it, and work started inside any region stays on the calling thread.

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace onnxkit::runtime {

// Below this many multiply-adds (a product, a convolution) a second thread
// costs more than it saves: waking it, and waiting for it when another
// process has its core.
inline constexpr double kParallelMacs = 64.0 * 64.0 * 64.0;

// True inside any OpenMP region, active or not.
inline bool inside_parallel_region() { return omp_get_level() > 0; }

// The threads a parallel loop started here may use: one inside a region,
// else the run's thread count (Session::run sets it).
inline int available_threads() { return inside_parallel_region() ? 1 : std::max(1, omp_get_max_threads()); }

// body(i) for every i in [0, n): shared out among the threads, a few items
// at a time, when `worth_threads` and there is more than one thread to use;
// in order on the calling thread otherwise, with no region opened.
template <class Body> void parallel_for(int64_t n, bool worth_threads, Body&& body) {
  if (worth_threads && n > 1 && available_threads() > 1) {
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < n; ++i) body(i);
  } else {
    for (int64_t i = 0; i < n; ++i) body(i);
  }
}

// body(t) for every t in [0, chunks), each chunk on a thread of its own; on
// the calling thread, with no region opened, for a single chunk. libgomp
// opens a region even for `#pragma omp parallel if (false)` or a team of
// one, and that costs about half a microsecond (a futex call once its pool
// has threads): more than a small op's whole work, many times per run in a
// model of small ops.
template <class Body> void for_each_chunk(int64_t chunks, Body&& body) {
  if (chunks > 1) {
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static)
    for (int64_t t = 0; t < chunks; ++t) body(t);
  } else if (chunks == 1) {
    body(0);
  }
}

// body(begin, end) over [0, n) in one contiguous range per thread, when
// `worth_threads` and there is more than one thread to use; body(0, n) on the
// calling thread otherwise, with no region opened (see for_each_chunk).
template <class Body> void parallel_ranges(int64_t n, bool worth_threads, Body&& body) {
  if (n <= 0) return;
  const int64_t chunks = worth_threads ? std::min<int64_t>(n, available_threads()) : 1;
  for_each_chunk(chunks, [&](int64_t t) { body(n * t / chunks, n * (t + 1) / chunks); });
}

// Holds the parallel code this thread starts, oneDNN's included, to at most
// `threads` until the scope ends.
class ThreadLimit {
 public:
  explicit ThreadLimit(int threads) : saved_(omp_get_max_threads()) {
    if (threads < saved_) omp_set_num_threads(std::max(1, threads));
  }
  ~ThreadLimit() { omp_set_num_threads(saved_); }
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int saved_;
};

}  // namespace onnxkit::runtime
