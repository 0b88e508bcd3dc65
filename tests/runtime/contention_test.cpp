// ContentionWatch: runs fall back to one thread while the process's threads
// wait for cores, and try their threads again after a pause; a session may
// keep its threads where its trial shows them faster. Time and waits
// are the test's own, so every decision is worked out by hand.

#include <gtest/gtest.h>

#include "runtime/contention.h"

namespace onnxkit::runtime {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

struct FakeMachine {
  ContentionWatch::Clock::time_point now{};
  int64_t waited_ns = 0;

  ContentionWatch watch() {
    return ContentionWatch({.now = [this] { return now; }, .cpu_wait_ns = [this] { return waited_ns; }});
  }
};

// One run of `wall` that wanted 2 threads, during which the threads waited
// `waited`; the threads it used.
int run(FakeMachine& machine, ContentionWatch& watch, microseconds wall, microseconds waited, HoldTrial* trial = nullptr) {
  const ContentionWatch::RunStart start = watch.start_run(2, trial);
  machine.now += wall;
  machine.waited_ns += std::chrono::nanoseconds(waited).count();
  watch.run_finished(start, wall);
  return start.threads;
}

TEST(ContentionWatch, AQuietMachineKeepsEveryThread) {
  FakeMachine machine;
  ContentionWatch watch = machine.watch();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(3)), 2);  // 5% waited
  EXPECT_EQ(watch.held_runs(), 0);
  EXPECT_EQ(watch.start_run(1).threads, 1);
}

TEST(ContentionWatch, BusyCoresHoldRunsToOneThreadForAPauseThatDoubles) {
  FakeMachine machine;
  ContentionWatch watch = machine.watch();
  // 30 ms of wall on 2 threads is 60 ms of thread time, a window of its own;
  // waiting 20 ms of it (a third) is contention: held from 30 ms to 130 ms,
  // so the runs starting at 30, 60, 90 and 120 ms use one thread.
  EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(20)), 2);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 1) << i;
  EXPECT_EQ(watch.held_runs(), 4);
  // The try at 150 ms still waits: held from 180 ms for 200 ms (seven runs).
  EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(20)), 2);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 1) << i;
  EXPECT_EQ(watch.held_runs(), 11);
  // The try at 390 ms is clean: the next hold is halved from 400 to 200 ms.
  EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 2);
  EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(20)), 2);  // at 420 ms: held 450 to 650 ms
  for (int i = 0; i < 7; ++i) EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 1) << i;
  EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 2);
  EXPECT_EQ(watch.held_runs(), 18);
}

TEST(ContentionWatch, WaitsAreJudgedOverAWindowNotOneShortRun) {
  FakeMachine machine;
  ContentionWatch watch = machine.watch();
  // Runs of 5 ms wall (10 ms of thread time): one of them waiting 4 ms is
  // not enough to judge; five together (50 ms) with 4 ms waited are fine.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(run(machine, watch, milliseconds(5), milliseconds(i == 0 ? 4 : 0)), 2);
  EXPECT_EQ(run(machine, watch, milliseconds(5), milliseconds(0)), 2);
  EXPECT_EQ(watch.held_runs(), 0);
}

TEST(ContentionWatch, TheWaitsOfADiscardedRunAreNotJudged) {
  FakeMachine machine;
  ContentionWatch watch = machine.watch();
  // A session's first run: 30 ms, 20 of them waited (what would hold the
  // next runs if judged, as BusyCoresHold... shows), then clean runs.
  EXPECT_EQ(watch.start_run(2).threads, 2);
  machine.now += milliseconds(30);
  machine.waited_ns += std::chrono::nanoseconds(milliseconds(20)).count();
  watch.run_discarded();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 2) << i;
  EXPECT_EQ(watch.held_runs(), 0);
}

TEST(ContentionWatch, WithoutSchedulerStatisticsNothingIsHeld) {
  ContentionWatch::Clock::time_point now{};
  ContentionWatch watch({.now = [&] { return now; }, .cpu_wait_ns = [] { return int64_t{-1}; }});
  for (int i = 0; i < 10; ++i) {
    const ContentionWatch::RunStart start = watch.start_run(2);
    EXPECT_EQ(start.threads, 2);
    now += milliseconds(30);
    watch.run_finished(start, milliseconds(30));
  }
}

// A watch that holds runs for the rest of the test (a first run of 30 ms
// that waited 20), and one session's trial under it.
struct TrialUnderHold {
  FakeMachine machine;
  ContentionWatch watch = machine.watch();
  HoldTrial trial;
  static constexpr int kTrialRuns = static_cast<int>(HoldTrial::kTrialRuns);
  static constexpr int kMajority = kTrialRuns / 2 + 1;  // spread runs that settle a trial

  TrialUnderHold() {
    EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(20)), 2);
    machine.now -= std::chrono::hours(1);  // held_until_ is an hour and 100 ms ahead
  }
  // The threads a run of the session that took `wall` used.
  int session_run(microseconds wall) { return run(machine, watch, wall, milliseconds(0), &trial); }
  // The trial: its held runs of `held`, then the runs with both threads it
  // takes when they all take `spread`: a majority settles it.
  void trial_runs(microseconds held, microseconds spread) {
    for (int i = 0; i < kTrialRuns; ++i) EXPECT_EQ(session_run(held), 1) << i;
    for (int i = 0; i < kMajority; ++i) EXPECT_EQ(session_run(spread), 2) << i;
  }
};

TEST(ContentionWatch, ASessionKeepsItsThreadsWhenItsTrialShowsThemFaster) {
  TrialUnderHold t;
  t.trial_runs(milliseconds(2), microseconds(1500));  // under 0.9 x 2
  // The verdict holds for 100 runs, whatever they take, then a new trial.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(t.session_run(milliseconds(9)), 2) << i;
  EXPECT_EQ(t.session_run(milliseconds(2)), 1);
  EXPECT_EQ(t.watch.held_runs(), TrialUnderHold::kTrialRuns + 1);  // runs with both threads were not held
  // A session without a trial is held as before.
  EXPECT_EQ(run(t.machine, t.watch, milliseconds(2), milliseconds(0)), 1);
}

TEST(ContentionWatch, ATrialRunsSpreadUntilAMajorityOfThoseRunsAgrees) {
  TrialUnderHold t;
  for (int i = 0; i < TrialUnderHold::kTrialRuns; ++i) EXPECT_EQ(t.session_run(milliseconds(10)), 1) << i;
  // Under 9 ms (0.9 x the held 10) or not, in turn: two each after four
  // runs, undecided; the fifth, fast, makes the majority.
  for (int i = 0; i < TrialUnderHold::kTrialRuns; ++i) EXPECT_EQ(t.session_run(milliseconds(i % 2 == 0 ? 8 : 12)), 2) << i;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(t.session_run(milliseconds(12)), 2) << i;
  EXPECT_EQ(t.session_run(milliseconds(10)), 1);  // the next trial
}

TEST(ContentionWatch, ASessionIsHeldWhenItsThreadsSaveTooLittle) {
  TrialUnderHold t;
  t.trial_runs(milliseconds(20), microseconds(18500));  // saves 7.5%, under the 10% asked
  for (int i = 0; i < 100; ++i) EXPECT_EQ(t.session_run(milliseconds(20)), 1) << i;
  // The next trial: its held runs first.
  EXPECT_EQ(t.session_run(milliseconds(20)), 1);
  EXPECT_EQ(t.watch.held_runs(), TrialUnderHold::kTrialRuns + 100 + 1);
}

// One run of `wall` that wanted 2 threads and outlasted its budget; the
// threads it started with.
int cut_short_run(FakeMachine& machine, ContentionWatch& watch, microseconds wall, HoldTrial* trial = nullptr) {
  const ContentionWatch::RunStart start = watch.start_run(2, trial);
  machine.now += wall;
  watch.spread_run_cut_short(start, wall);
  return start.threads;
}

TEST(ContentionWatch, ARunCutShortHoldsRunsUnlessTheyAreHeld) {
  FakeMachine machine;
  ContentionWatch watch = machine.watch();
  // Cut short at 30 ms, whatever the waits say: held from 30 to 130 ms.
  EXPECT_EQ(cut_short_run(machine, watch, milliseconds(30)), 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 1) << i;
  // Held still, a session's trial: five held runs of 1 ms, then one with
  // both threads, cut short at 129 ms: the hold stays as it was.
  HoldTrial trial;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(run(machine, watch, milliseconds(1), milliseconds(0), &trial), 1) << i;
  EXPECT_EQ(cut_short_run(machine, watch, milliseconds(4), &trial), 2);
  EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 1);  // from 129 ms
  // At 159 ms the try; cut short at 189, it holds for the doubled pause,
  // 200 ms: seven runs.
  EXPECT_EQ(cut_short_run(machine, watch, milliseconds(30)), 2);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 1) << i;
  EXPECT_EQ(run(machine, watch, milliseconds(30), milliseconds(0)), 2);  // at 399 ms
  EXPECT_EQ(watch.held_runs(), 16);
  EXPECT_EQ(watch.cut_short_runs(), 3);
}

TEST(ContentionWatch, ARunPastItsBudgetIsContendedWhenItsWindowsWaitsSaySo) {
  FakeMachine machine;
  ContentionWatch watch = machine.watch();
  EXPECT_EQ(run(machine, watch, milliseconds(10), milliseconds(0)), 2);  // 20 of a 50 ms window
  const ContentionWatch::RunStart start = watch.start_run(2);
  // 10 ms in: 40 ms of thread time, 6 ms waited (15%) is not above the
  // share; 6.5 ms is.
  machine.now += milliseconds(10);
  machine.waited_ns += std::chrono::nanoseconds(milliseconds(6)).count();
  EXPECT_FALSE(watch.contended(start, milliseconds(10)));
  machine.waited_ns += std::chrono::nanoseconds(microseconds(500)).count();
  EXPECT_TRUE(watch.contended(start, milliseconds(10)));
  // A run on one thread never is.
  EXPECT_FALSE(watch.contended(watch.start_run(1), milliseconds(10)));
}

TEST(SpreadBudget, TheLessOfTwiceTheFastestSpreadRunAndTheFastestSingleOne) {
  SpreadBudget budget;
  constexpr size_t kSpread = 7, kSingle = 70, kOtherSpread = 8, kOtherSingle = 80;
  EXPECT_EQ(budget.budget(kSpread, kSingle), std::nullopt);  // nothing has run
  budget.run_finished(kSpread, milliseconds(10));
  budget.run_finished(kSpread, milliseconds(6));
  budget.run_finished(kSpread, milliseconds(9));
  EXPECT_EQ(budget.budget(kSpread, kSingle), milliseconds(14));  // 2 x 6 + 2
  budget.run_finished(kSingle, milliseconds(11));
  EXPECT_EQ(budget.budget(kSpread, kSingle), milliseconds(13));  // 11 + 2
  // Other shapes have their own; one-thread runs alone give a budget.
  EXPECT_EQ(budget.budget(kOtherSpread, kOtherSingle), std::nullopt);
  budget.run_finished(kOtherSingle, microseconds(500));
  EXPECT_EQ(budget.budget(kOtherSpread, kOtherSingle), microseconds(2500));
  EXPECT_EQ(budget.budget(kSpread, kSingle), milliseconds(13));
}

TEST(SpreadBudget, PastItsKeysTheMemoryStartsAgain) {
  SpreadBudget budget;
  constexpr size_t kNone = SpreadBudget::kMostKeys + 1;  // a key no run has
  for (size_t key = 0; key < SpreadBudget::kMostKeys; ++key) budget.run_finished(key, milliseconds(1));
  budget.run_finished(0, milliseconds(2));  // known: kept
  EXPECT_EQ(budget.budget(SpreadBudget::kMostKeys - 1, kNone), milliseconds(4));
  budget.run_finished(SpreadBudget::kMostKeys, milliseconds(3));  // one too many
  EXPECT_EQ(budget.budget(0, kNone), std::nullopt);
  EXPECT_EQ(budget.budget(SpreadBudget::kMostKeys, kNone), milliseconds(8));
}

TEST(ContentionWatch, ThisProcessWaitsAreReadable) {
  // Linux keeps them for every thread; the suite runs on Linux.
  EXPECT_GE(process_cpu_wait_ns(), 0);
}

}  // namespace
}  // namespace onnxkit::runtime
