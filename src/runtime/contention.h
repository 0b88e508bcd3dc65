#pragma once
// Runs on more than one thread, when other work keeps the cores busy.
//
// Kernels share their work out in OpenMP regions (ours and oneDNN's), and a
// region ends only when every thread of its team has run its part. When
// other processes hold the cores, each region waits for a thread that has
// no core, and a 2-thread run takes many times as long as a 1-thread one.
// So the process watches how long its threads wait, runnable, for a core
// (Linux's per-thread schedstat): while that is more than a small share of
// the runs' time, runs use one thread; after a pause that doubles while the
// contention lasts (and halves once it is gone), they try their threads
// again.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>

namespace onnxkit::runtime {

// Nanoseconds this process's threads have spent runnable but waiting for a
// CPU, over their lives (threads that have ended are not counted), or -1
// where the kernel does not say.
int64_t process_cpu_wait_ns();

class ContentionWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // Where the watch reads the time and the waits (tests give their own).
  struct Sources {
    std::function<Clock::time_point()> now = Clock::now;
    std::function<int64_t()> cpu_wait_ns = process_cpu_wait_ns;
  };
  ContentionWatch();
  explicit ContentionWatch(Sources sources) : sources_(std::move(sources)) {}

  // The threads a run starting now may use, at most `wanted` (at least 1).
  int threads_for_run(int wanted);
  // A run that used `threads` took `wall`.
  void run_finished(int threads, Clock::duration wall);
  // A run whose waits say nothing about the machine: a session's first,
  // which starts OpenMP's threads (a new thread waits for a core until the
  // scheduler moves it off its parent's: 10-20 ms on an idle 2-core VM).
  void run_discarded();

  // Runs held to one thread so far because the cores were busy.
  int64_t held_runs() const;

  // The one watch of the process: contention is the machine's.
  static ContentionWatch& process();

  // Waits are read once per window of multi-thread run time (wall time x
  // threads), not per run: a read costs tens of microseconds.
  static constexpr Clock::duration kWindow = std::chrono::milliseconds(50);
  // A window whose threads waited this share of their time was contended
  // (an idle machine's background leaves well under a tenth).
  static constexpr double kContendedShare = 0.15;
  static constexpr Clock::duration kFirstPause = std::chrono::milliseconds(100);
  static constexpr Clock::duration kLongestPause = std::chrono::seconds(5);

 private:
  const Sources sources_;
  mutable std::mutex mutex_;
  Clock::time_point held_until_{};        // runs before this use one thread
  Clock::duration pause_ = kFirstPause;   // the next hold's length
  Clock::duration window_thread_time_{};  // multi-thread run time (wall x threads) since window_wait_ns_ was read
  int64_t window_wait_ns_ = -1;
  int64_t held_runs_ = 0;
};

}  // namespace onnxkit::runtime
