// The text family: StringNormalizer, TfIdfVectorizer, StringConcat, StringSplit
// and RegexFullMatch.

#include "runtime/kernels/text/text.h"

namespace onnxkit::runtime {

void register_text_kernels(KernelRegistry& registry) {
  register_each(registry, {text::register_string_normalizer, text::register_tfidf_vectorizer, text::register_concat_split,
                           text::register_regex_full_match});
}

}  // namespace onnxkit::runtime
