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

std::string human_ms(double ms) {
  if (ms < 0.9995) return fmt::format("{:.1f} µs", ms * 1000);
  return fmt::format("{:.2f} ms", ms);
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i != 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string quote_first(const std::vector<std::string>& parts, size_t most) {
  std::string out;
  for (size_t i = 0; i < parts.size() && i < most; ++i) out += (i == 0 ? "'" : ", '") + parts[i] + "'";
  if (parts.size() > most) out += ", ...";
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

size_t decode_utf8(std::string_view s, size_t i, char32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  size_t length = 0;
  char32_t smallest = 0;  // the least code point that needs `length` bytes
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code_point = lead & 0x1F;
    smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code_point = lead & 0x0F;
    smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code_point = lead & 0x07;
    smallest = 0x10000;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  if (code_point < smallest || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return length;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace onnxkit
