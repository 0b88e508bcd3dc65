// StringNormalizer (opset 10): drops the stop words of a [C] or [1, C] string
// tensor, then lower- or upper-cases what is left.
//
// What case changes cover: text is decoded as UTF-8 and every code point goes
// through towlower_l / towupper_l under the C.UTF-8 locale, i.e. Unicode's
// one-to-one case mappings (É <-> é, Σ <-> σ, Ж <-> ж; ß stays ß because its
// upper case is two letters). The locale is a private locale_t, so the
// process-wide locale is never read or changed. Where C.UTF-8 is not
// installed only ASCII letters change case. Bytes that are not well-formed
// UTF-8 are copied as they are rather than rejecting the whole text.
//
// The `locale` attribute may be "" or "en_US", whose rules these are; other
// locales (Turkish dotless i, Lithuanian accents, ...) are refused rather than
// silently treated as English.

#include <locale.h>

#include <cwctype>
#include <string_view>
#include <unordered_set>

#include "runtime/kernels/text/text.h"
#include "util/text.h"

namespace onnxkit::runtime::text {
namespace {

enum class CaseChange { none, lower, upper };

// C.UTF-8's character classes, or (locale_t)0 when the system lacks it.
locale_t utf8_ctype() {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return locale;
}

char32_t change_case(char32_t c, CaseChange change) {
  if (locale_t locale = utf8_ctype(); locale != static_cast<locale_t>(nullptr)) {
    const wint_t w = static_cast<wint_t>(c);
    return static_cast<char32_t>(change == CaseChange::lower ? towlower_l(w, locale) : towupper_l(w, locale));
  }
  if (change == CaseChange::lower && c >= 'A' && c <= 'Z') return c + ('a' - 'A');
  if (change == CaseChange::upper && c >= 'a' && c <= 'z') return c - ('a' - 'A');
  return c;
}

std::string change_case(std::string_view s, CaseChange change) {
  if (change == CaseChange::none) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t code_point = 0;
    const size_t length = decode_utf8(s, i, code_point);
    if (length == 0) {
      out += s[i++];
      continue;
    }
    append_utf8(change_case(code_point, change), out);
    i += length;
  }
  return out;
}

Result<ComputeFn> build_string_normalizer(const KernelInfo& info) {
  const std::string action = info.attr_string("case_change_action", "NONE");
  CaseChange change = CaseChange::none;
  if (action == "LOWER") {
    change = CaseChange::lower;
  } else if (action == "UPPER") {
    change = CaseChange::upper;
  } else if (action != "NONE") {
    return make_error("case_change_action must be LOWER, UPPER or NONE, got '{}'", action);
  }
  if (const std::string locale = info.attr_string("locale", ""); !locale.empty() && locale != "en_US")
    return make_error("locale '{}' is not supported: only en_US (the default) is", locale);
  const bool case_sensitive = info.attr_int("is_case_sensitive", 0) != 0;
  // Without case sensitivity, stop words and elements meet in lower case.
  std::unordered_set<std::string> stopwords;
  for (const std::string& word : info.attr_strings("stopwords"))
    stopwords.insert(case_sensitive ? word : change_case(word, CaseChange::lower));

  return ComputeFn([=](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->dtype() != DataType::string) return make_error("X must be a string tensor, got {}", to_string(x->dtype()));
    const bool two_d = x->rank() == 2;
    if (x->rank() != 1 && !(two_d && x->dim(0) == 1))
      return make_error("X must have shape [C] or [1, C], got {}", shape_to_string(x->shape()));
    std::vector<std::string> kept;
    for (const std::string& s : x->values<std::string>()) {
      const bool stop = !stopwords.empty() && stopwords.contains(case_sensitive ? s : change_case(s, CaseChange::lower));
      if (!stop) kept.push_back(change_case(s, change));
    }
    // When every element is a stop word the spec still asks for one (empty) string.
    if (kept.empty()) kept.emplace_back();
    const auto count = static_cast<int64_t>(kept.size());
    Tensor& y = ctx.output(0, DataType::string, two_d ? Shape{1, count} : Shape{count});
    std::move(kept.begin(), kept.end(), y.mutable_data<std::string>());
    return {};
  });
}

}  // namespace

void register_string_normalizer(KernelRegistry& registry) {
  registry.add("", "StringNormalizer", 10, kLatestOpset, make_kernel(build_string_normalizer));
}

}  // namespace onnxkit::runtime::text
