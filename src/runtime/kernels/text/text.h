#pragma once
// The text family: ops on string tensors (and TfIdfVectorizer, which also
// takes integer tokens). Strings are UTF-8 bytes; only StringNormalizer looks
// at characters, the others work on bytes.

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::text {

void register_string_normalizer(KernelRegistry& registry);  // StringNormalizer (opset 10+)
void register_tfidf_vectorizer(KernelRegistry& registry);   // TfIdfVectorizer (opset 9+)
void register_concat_split(KernelRegistry& registry);       // StringConcat, StringSplit (opset 20+)
void register_regex_full_match(KernelRegistry& registry);   // RegexFullMatch (opset 20+), with RE2

}  // namespace onnxkit::runtime::text
