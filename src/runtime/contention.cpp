#include "runtime/contention.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace onnxkit::runtime {

int64_t process_cpu_wait_ns() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  int64_t total = 0;
  bool any = false;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + entry->d_name + "/schedstat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the thread has ended
    char text[128];
    const ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    // "time on a CPU, time waiting for one, time slices", in nanoseconds.
    long long on_cpu = 0, waiting = 0;
    if (std::sscanf(text, "%lld %lld", &on_cpu, &waiting) == 2) {
      total += waiting;
      any = true;
    }
  }
  closedir(tasks);
  return any ? total : -1;
}

bool HoldTrial::spread_when_held() {
  std::lock_guard lock(mutex_);
  if (trusted_left_ > 0) {
    --trusted_left_;
    return spread_verdict_;
  }
  if (held_.size() < kTrialRuns) return false;
  // Spreading wins when the median of its kTrialRuns runs beats the bar,
  // that is when a majority of them do: decided as soon as a majority is
  // in, either way, the same verdict as after all of them. A losing trial
  // (Faster R-CNN under a competitor: 90 ms spread against 77 held) costs
  // three slow runs, not five.
  std::nth_element(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(kTrialRuns / 2), held_.end());
  const double bar = (1.0 - kSpreadSaving) * std::chrono::duration<double>(held_[kTrialRuns / 2]).count();
  const auto faster = static_cast<size_t>(std::count_if(spread_.begin(), spread_.end(), [&](ContentionClock::duration wall) {
    return std::chrono::duration<double>(wall).count() < bar;
  }));
  constexpr size_t kMajority = kTrialRuns / 2 + 1;
  if (faster < kMajority && spread_.size() - faster < kMajority) return true;  // undecided: another run spread
  spread_verdict_ = faster >= kMajority;
  held_.clear();
  spread_.clear();
  trusted_left_ = kTrustedRuns - 1;
  return spread_verdict_;
}

void HoldTrial::held_run_finished(bool spread, ContentionClock::duration wall) {
  std::lock_guard lock(mutex_);
  if (trusted_left_ > 0) return;
  std::vector<ContentionClock::duration>& walls = spread ? spread_ : held_;
  if (walls.size() < kTrialRuns) walls.push_back(wall);
}

std::optional<SpreadBudget::Clock::duration> SpreadBudget::budget(size_t spread_key, size_t single_key) const {
  std::lock_guard lock(mutex_);
  std::optional<Clock::duration> budget;
  if (const auto spread = fastest_.find(spread_key); spread != fastest_.end()) budget = 2 * spread->second;
  if (const auto single = fastest_.find(single_key); single != fastest_.end())
    budget = budget ? std::min(*budget, single->second) : single->second;
  if (budget) *budget += kSlack;
  return budget;
}

void SpreadBudget::run_finished(size_t key, Clock::duration wall) {
  std::lock_guard lock(mutex_);
  if (fastest_.size() >= kMostKeys && !fastest_.count(key)) fastest_.clear();
  auto [at, added] = fastest_.try_emplace(key, wall);
  if (!added) at->second = std::min(at->second, wall);
}

ContentionWatch::ContentionWatch() : ContentionWatch(Sources{}) {}

void ContentionWatch::hold_locked() {
  held_until_ = sources_.now() + pause_;
  pause_ = std::min(2 * pause_, kLongestPause);
}

ContentionWatch::RunStart ContentionWatch::start_run(int wanted, HoldTrial* trial) {
  RunStart start{.threads = std::max(1, wanted), .trial = trial};
  if (wanted <= 1) return start;
  std::lock_guard lock(mutex_);
  start.held = sources_.now() < held_until_;
  if (start.held && (trial == nullptr || !trial->spread_when_held())) {
    ++held_runs_;
    start.threads = 1;
    return start;
  }
  if (window_wait_ns_ < 0) window_wait_ns_ = sources_.cpu_wait_ns();
  return start;
}

void ContentionWatch::run_finished(const RunStart& start, Clock::duration wall) {
  if (start.held && start.trial != nullptr) start.trial->held_run_finished(start.threads > 1, wall);
  if (start.threads <= 1) return;
  std::lock_guard lock(mutex_);
  if (window_wait_ns_ < 0) return;  // the kernel does not say: never hold
  window_thread_time_ += wall * start.threads;
  if (window_thread_time_ < kWindow) return;
  const int64_t waited = sources_.cpu_wait_ns() - window_wait_ns_;
  const double share = static_cast<double>(waited) /
                       static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(window_thread_time_).count());
  if (share > kContendedShare) {
    hold_locked();
  } else {
    pause_ = std::max(pause_ / 2, kFirstPause);
  }
  window_thread_time_ = {};
  window_wait_ns_ = -1;  // read again when runs next use their threads
}

void ContentionWatch::run_discarded() {
  std::lock_guard lock(mutex_);
  window_wait_ns_ = -1;  // the next multi-thread run reads the waits afresh
}

bool ContentionWatch::contended(const RunStart& start, Clock::duration elapsed) const {
  std::lock_guard lock(mutex_);
  if (window_wait_ns_ < 0 || start.threads <= 1) return false;
  const int64_t waited = sources_.cpu_wait_ns() - window_wait_ns_;
  const auto thread_time = window_thread_time_ + elapsed * start.threads;
  return static_cast<double>(waited) >
         kContendedShare * static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(thread_time).count());
}

void ContentionWatch::spread_run_cut_short(const RunStart& start, Clock::duration wall) {
  if (start.held && start.trial != nullptr) start.trial->held_run_finished(true, wall);
  std::lock_guard lock(mutex_);
  ++cut_short_runs_;
  if (sources_.now() >= held_until_) hold_locked();
  window_thread_time_ = {};
  window_wait_ns_ = -1;
}

int64_t ContentionWatch::held_runs() const {
  std::lock_guard lock(mutex_);
  return held_runs_;
}

int64_t ContentionWatch::cut_short_runs() const {
  std::lock_guard lock(mutex_);
  return cut_short_runs_;
}

ContentionWatch& ContentionWatch::process() {
  static ContentionWatch watch;
  return watch;
}

}  // namespace onnxkit::runtime
