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
