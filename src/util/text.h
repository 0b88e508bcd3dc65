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

// A duration given in milliseconds, at a resolution that shows tiny models'
// times: "12.3 µs" below 1 ms, else "4.56 ms".
std::string human_ms(double ms);

// Joins with a separator.
std::string join(const std::vector<std::string>& parts, std::string_view separator);
// The first `most` parts quoted ('a', 'b', ...), then ", ..." when there are more.
std::string quote_first(const std::vector<std::string>& parts, size_t most);

// Splits on a separator; empty parts are kept.
std::vector<std::string> split(std::string_view text, char separator);

// The closest of `candidates` to `word` by edit distance, if close enough to
// be worth suggesting ("did you mean ...?"); empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
// "; did you mean 'X'?" with X = closest_match(word, candidates), or "" when none is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// The code point of the UTF-8 sequence at s[i] and its length in bytes, or a
// length of 0 when the bytes there are not well-formed UTF-8 (truncated,
// overlong, a surrogate or beyond U+10FFFF).
size_t decode_utf8(std::string_view s, size_t i, char32_t& code_point);

// Appends code point c (at most U+10FFFF) as UTF-8.
void append_utf8(char32_t c, std::string& out);

}  // namespace onnxkit
