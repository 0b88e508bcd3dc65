#include "util/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace onnxkit {

std::string human_bytes(uint64_t n) {
  const double d = static_cast<double>(n);
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", d / (1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.1f} MiB", d / (1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.1f} KiB", d / (1ull << 10));
  return fmt::format("{} B", n);
}

std::string human_count(uint64_t n) {
  const double d = static_cast<double>(n);
  if (n >= 1'000'000'000ull) return fmt::format("{:.2f} G", d / 1e9);
  if (n >= 1'000'000ull) return fmt::format("{:.2f} M", d / 1e6);
  if (n >= 10'000ull) return fmt::format("{:.1f} K", d / 1e3);
  return fmt::format("{}", n);
}

std::string human_count(uint64_t count, std::string_view unit) {
  std::string number = human_count(count);
  bool scaled = !number.empty() && std::isalpha(static_cast<unsigned char>(number.back()));
  return number + (scaled ? "" : " ") + std::string(unit);
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i != 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

static size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best = closest_match(word, candidates);
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

}  // namespace onnxkit
