// parallel_ranges and for_each_chunk: every index visited once, in
// contiguous ranges, on several threads only when the work is worth them
// and threads are there to take it. Whether a region opens at all is
// thread_tests' (it counts them).

#include <gtest/gtest.h>
#include <omp.h>

#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "runtime/parallel.h"

namespace onnxkit::runtime {
namespace {

struct Visits {
  std::vector<int> count;  // per index
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<int> threads;  // omp_get_thread_num() of each call
};

Visits visit_ranges(int64_t n, bool worth, int threads) {
  Visits v;
  std::mutex mutex;
  v.count.assign(static_cast<size_t>(n), 0);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  parallel_ranges(n, worth, [&](int64_t begin, int64_t end) {
    std::lock_guard lock(mutex);
    v.ranges.emplace_back(begin, end);
    v.threads.insert(omp_get_thread_num());
    for (int64_t i = begin; i < end; ++i) ++v.count[static_cast<size_t>(i)];
  });
  omp_set_num_threads(saved);
  return v;
}

TEST(ParallelRanges, VisitsEveryIndexOnce) {
  for (int threads : {1, 2, 3})
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{1000}})
      for (bool worth : {false, true}) {
        Visits v = visit_ranges(n, worth, threads);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(v.count[static_cast<size_t>(i)], 1) << "index " << i << " of " << n << ", " << threads << " threads";
        for (const auto& [begin, end] : v.ranges) EXPECT_LT(begin, end) << "an empty range was handed out";
      }
}

TEST(ParallelRanges, SmallWorkStaysOnTheCallingThread) {
  Visits v = visit_ranges(1000, false, 2);
  ASSERT_EQ(v.ranges.size(), 1u);
  EXPECT_EQ(v.ranges[0], std::make_pair(int64_t{0}, int64_t{1000}));
  EXPECT_EQ(omp_get_level(), 0);
}

TEST(ParallelRanges, WorkWorthThreadsGetsOneRangePerThread) {
  Visits v = visit_ranges(1000, true, 2);
  EXPECT_EQ(v.ranges.size(), 2u);
  EXPECT_EQ(v.threads.size(), 2u);
  // One item: one range, however many threads.
  EXPECT_EQ(visit_ranges(1, true, 2).ranges.size(), 1u);
}

TEST(ParallelRanges, InsideARegionStaysOnItsThread) {
  std::vector<size_t> ranges_per_thread(2, 0);
#pragma omp parallel num_threads(2)
  {
    size_t ranges = 0;
    parallel_ranges(1000, true, [&](int64_t, int64_t) { ++ranges; });
    ranges_per_thread[static_cast<size_t>(omp_get_thread_num())] = ranges;
  }
  EXPECT_EQ(ranges_per_thread, std::vector<size_t>({1, 1}));
}

TEST(ForEachChunk, RunsEachChunkOnce) {
  for (int64_t chunks : {0, 1, 2, 5}) {
    std::vector<int> seen(static_cast<size_t>(chunks), 0);
    for_each_chunk(chunks, [&](int64_t t) { ++seen[static_cast<size_t>(t)]; });  // distinct t: no race
    EXPECT_EQ(seen, std::vector<int>(static_cast<size_t>(chunks), 1)) << chunks << " chunks";
  }
}

}  // namespace
}  // namespace onnxkit::runtime
