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
// again. Each session may still take its threads while runs are held, where
// it has seen that pay (HoldTrial). The waits are read after a run, and a
// run on a busy machine can take many times its length before that: one
// that outlasts its SpreadBudget goes on with one thread, and runs are held.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace onnxkit::runtime {

// Nanoseconds this process's threads have spent runnable but waiting for a
// CPU, over their lives (threads that have ended are not counted), or -1
// where the kernel does not say.
int64_t process_cpu_wait_ns();

using ContentionClock = std::chrono::steady_clock;

// One session's choice while the watch holds runs to one thread. Holding
// helps a model whose runs are long next to the other work's bursts: each of
// its many parallel regions would wait for a descheduled partner. A run of a
// millisecond often fits between the bursts and loses more to one thread
// than it waits (MobileNetV3-Small under a 3 ms busy / 2 ms idle competitor:
// 1.9 ms held, 1.4 with both threads; ResNet-18 27 held, 29 not). So the
// session times kTrialRuns held runs and up to as many with its threads
// (until a majority of those beats the held median by kSpreadSaving, or
// cannot), keeps the faster for kTrustedRuns runs, then tries again.
// Thread-safe.
class HoldTrial {
 public:
  // Whether a run the watch would hold uses its threads anyway.
  bool spread_when_held();
  // A run the watch held (or `spread`: one it would have) took `wall`.
  void held_run_finished(bool spread, ContentionClock::duration wall);

  static constexpr size_t kTrialRuns = 5;
  static constexpr int64_t kTrustedRuns = 100;
  // Spreading must save this share of the held runs' median: holding also
  // leaves the other work its core.
  static constexpr double kSpreadSaving = 0.1;

 private:
  std::mutex mutex_;
  std::vector<ContentionClock::duration> held_, spread_;  // walls of this trial's runs
  int64_t trusted_left_ = 0;                              // runs left that follow the last trial's verdict
  bool spread_verdict_ = false;
};

// How long a run on several threads may go before the rest of it takes one
// thread: the less of twice its fastest run and the fastest run of the
// same inputs' shapes on one thread, and kSlack more. Each parallel region
// waits for all its threads, and with a core taken by other work a region
// waits up to a scheduler slice for the thread on it: LRASPP at 2 threads,
// a bursty competitor pinned to one core and a low-priority spinner beside
// it, had runs of 100 ms against 5 quiet until the watch held runs. A
// session's first run (one-time work) is not counted. Thread-safe.
class SpreadBudget {
 public:
  using Clock = ContentionClock;

  // The budget of a run of `spread_key` (a thread count above one and the
  // inputs' shapes, hashed) whose runs on one thread are `single_key`;
  // none until a run of either has gone through on its threads.
  std::optional<Clock::duration> budget(size_t spread_key, size_t single_key) const;
  // A run of `key` went through on the threads it started with in `wall`.
  void run_finished(size_t key, Clock::duration wall);

  static constexpr Clock::duration kSlack = std::chrono::milliseconds(2);
  // Keys remembered: past this many the memory starts again.
  static constexpr size_t kMostKeys = 64;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<size_t, Clock::duration> fastest_;
};

class ContentionWatch {
 public:
  using Clock = ContentionClock;

  // Where the watch reads the time and the waits (tests give their own).
  struct Sources {
    std::function<Clock::time_point()> now = Clock::now;
    std::function<int64_t()> cpu_wait_ns = process_cpu_wait_ns;
  };
  ContentionWatch();
  explicit ContentionWatch(Sources sources) : sources_(std::move(sources)) {}

  // What a run starting now may use: at most `wanted` threads (at least 1);
  // `trial`, where given, may take them while the watch holds runs.
  struct RunStart {
    int threads = 1;
    bool held = false;  // the watch held runs to one thread when it started
    HoldTrial* trial = nullptr;
  };
  RunStart start_run(int wanted, HoldTrial* trial = nullptr);
  // The run `start` began took `wall`.
  void run_finished(const RunStart& start, Clock::duration wall);
  // A run whose waits say nothing about the machine: a session's first,
  // which starts OpenMP's threads (a new thread waits for a core until the
  // scheduler moves it off its parent's: 10-20 ms on an idle 2-core VM).
  void run_discarded();
  // Whether the run `start` began, `elapsed` into it, waits for cores: its
  // threads have waited more than kContendedShare of their time since the
  // window began (asked by a run past its SpreadBudget: a run may be long
  // for its inputs' values, a Loop's count or the boxes NMS keeps).
  bool contended(const RunStart& start, Clock::duration elapsed) const;
  // The run `start` began outlasted its SpreadBudget, went on with one
  // thread and took `wall` (in place of run_finished): runs are held, as
  // after a contended window, unless they already are.
  void spread_run_cut_short(const RunStart& start, Clock::duration wall);

  // Runs held to one thread so far because the cores were busy.
  int64_t held_runs() const;
  // Runs cut short so far (spread_run_cut_short).
  int64_t cut_short_runs() const;

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
  void hold_locked();  // runs are held for the next pause, and it doubles

  const Sources sources_;
  mutable std::mutex mutex_;
  Clock::time_point held_until_{};        // runs before this use one thread
  Clock::duration pause_ = kFirstPause;   // the next hold's length
  Clock::duration window_thread_time_{};  // multi-thread run time (wall x threads) since window_wait_ns_ was read
  int64_t window_wait_ns_ = -1;
  int64_t held_runs_ = 0, cut_short_runs_ = 0;
};

}  // namespace onnxkit::runtime
