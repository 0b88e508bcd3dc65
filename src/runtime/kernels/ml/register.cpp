// The ai.onnx.ml family (ml.h).

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime {

void register_ml_kernels(KernelRegistry& registry) {
  ml::register_tree_ensemble(registry);
  ml::register_zipmap(registry);
  ml::register_linear(registry);
  ml::register_svm(registry);
  ml::register_preprocess(registry);
  ml::register_encoders(registry);
}

}  // namespace onnxkit::runtime
