// The text family: StringNormalizer, TfIdfVectorizer, StringConcat and StringSplit.

#include "runtime/kernels/text/text.h"

namespace onnxkit::runtime {

void register_text_kernels(KernelRegistry& registry) {
  text::register_string_normalizer(registry);
  text::register_tfidf_vectorizer(registry);
  text::register_concat_split(registry);
}

}  // namespace onnxkit::runtime
