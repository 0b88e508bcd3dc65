#pragma once
// A progress line for long work. Tools say which step they start; only the
// work on a big model (where steps take seconds) passes them on, and whether
// anyone sees them (a terminal, no --quiet) is the CLI's choice.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

namespace onnxkit {

// Called with the step being started: "reading", "running A".
using ProgressFn = std::function<void(std::string_view step)>;

class Progress {
 public:
  // Models from this size or node count get a progress line: below them the
  // whole work ends before a line could be read.
  static constexpr uint64_t kBigBytes = 100'000'000;
  static constexpr size_t kBigNodes = 2000;

  Progress() = default;
  explicit Progress(ProgressFn fn) : fn_(std::move(fn)) {}

  // Steps pass from now on when the model is big (and stay on once it is).
  void size_up(uint64_t file_bytes, size_t nodes) { big_ = big_ || file_bytes >= kBigBytes || nodes >= kBigNodes; }
  void step(std::string_view what) const {
    if (big_ && fn_) fn_(what);
  }

 private:
  ProgressFn fn_;
  bool big_ = false;
};

}  // namespace onnxkit
