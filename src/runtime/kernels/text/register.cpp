// The text family: StringNormalizer, TfIdfVectorizer, StringConcat, StringSplit
// and RegexFullMatch.

#include "runtime/kernels/text/text.h"

namespace onnxkit::runtime {

void register_text_kernels(KernelRegistry& registry) {
  text::register_string_normalizer(registry);
  text::register_tfidf_vectorizer(registry);
  text::register_concat_split(registry);
  text::register_regex_full_match(registry);
}

}  // namespace onnxkit::runtime
