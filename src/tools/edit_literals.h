#pragma once
// Literals of `onnxkit edit`'s operations: numbers, [lists] and typed
// tensors such as float:[1,1,2,2]. Internal to tools/ (edit, simplify).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace onnxkit::tools::literals {

std::string_view trim(std::string_view text);
// A whole-string integer ("12", "-1"); "1.5" and "1e3" are not.
Result<int64_t> parse_int(std::string_view text);
// A whole-string real number ("1e-5", "0.5", "3", "inf", "nan").
Result<double> parse_float(std::string_view text);
bool is_int(std::string_view text);
bool is_float(std::string_view text);
// "[a, b, c]" (or "a,b,c") as its trimmed items; "[]" is empty. Quotes
// around an item are removed.
std::vector<std::string> parse_list(std::string_view text);
bool is_bracketed(std::string_view text);
// Removes one pair of matching quotes around `text`, if any.
std::string unquote(std::string_view text);

}  // namespace onnxkit::tools::literals
