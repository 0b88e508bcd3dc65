// The ai.onnx.ml family (ml.h).

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime {

void register_ml_kernels(KernelRegistry& registry) {
  register_each(registry, {ml::register_tree_ensemble, ml::register_zipmap, ml::register_linear, ml::register_svm,
                           ml::register_preprocess, ml::register_encoders});
}

}  // namespace onnxkit::runtime
