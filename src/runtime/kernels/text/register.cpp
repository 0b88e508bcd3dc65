// The text family: StringNormalizer, TfIdfVectorizer, StringConcat and StringSplit.

#include "runtime/kernels/common.h"

namespace onnxkit::runtime {

void register_text_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
