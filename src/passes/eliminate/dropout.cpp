// eliminate-dropout: at inference, Dropout is the identity.
//
// Before:  y = Dropout(x, ratio)      z = Relu(y)
// After:   z = Relu(x)
//
// Conditions: the mask output unused; from opset 12, training_mode absent or
// a constant false (a computed one may switch training on); before opset 7,
// is_test = 1 (the attribute chose the mode then, training by default).
// From opset 7 to 11 the runtime chooses, and an inference runtime copies.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool is_inference_dropout(const ir::Node& dropout, const PassContext& context) {
  if (context.opset() < 7) return dropout.attr_int("is_test", 0) == 1;
  if (context.opset() < 12) return true;
  const ir::Value* training_mode = dropout.input(2);
  if (training_mode == nullptr) return true;
  auto flag = context.constant(training_mode);
  return flag && flag->dtype() == runtime::DataType::boolean && flag->numel() == 1 && !flag->data<bool>()[0];
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_dropout() {
  return make_bypass_pass("eliminate-dropout", "remove Dropout in inference mode (its mask unused)", {"Dropout"},
                          is_inference_dropout);
}

}  // namespace onnxkit::passes::eliminate
