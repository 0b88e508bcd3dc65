#pragma once
// Small formatting helpers shared by reports.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxkit {

// "512 B", "12.3 KiB", "97.8 MiB", "2.50 GiB".
std::string human_bytes(uint64_t bytes);

// "950", "12.3 K", "11.70 M", "1.82 G": for counts such as parameters.
std::string human_count(uint64_t count);

// A count with its unit: "0 MACs", "950 FLOPs", "1.82 GMACs".
std::string human_count(uint64_t count, std::string_view unit);

// Joins with a separator.
std::string join(const std::vector<std::string>& parts, std::string_view separator);

// Splits on a separator; empty parts are kept.
std::vector<std::string> split(std::string_view text, char separator);

// The closest of `candidates` to `word` by edit distance, if close enough to
// be worth suggesting ("did you mean ...?"); empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
// "; did you mean 'X'?" with X = closest_match(word, candidates), or "" when none is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace onnxkit
