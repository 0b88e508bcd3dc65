// eliminate-dropout: at inference, Dropout is the identity; so it is in
// training when it drops nothing (ratio 0).
//
// Before:  y = Dropout(x, ratio)      z = Relu(y)
// After:   z = Relu(x)
//
// Conditions: the mask output unused; from opset 12, training_mode absent or
// a constant false (a computed one may switch training on), or ratio a
// constant 0, which keeps every element and scales by 1/(1 - 0) in either
// mode (torchvision's Swin-T calls F.dropout(p=0.0) without training=False:
// its export holds 24 such nodes with training_mode true); before opset 7,
// is_test = 1 (the attribute chose the mode then, training by default).
// From opset 7 to 11 the runtime chooses, and an inference runtime copies.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

// True when `ratio` is a constant 0 (a float of any width).
bool drops_nothing(const ir::Value* ratio, const PassContext& context) {
  auto tensor = ratio != nullptr ? context.constant(ratio) : std::nullopt;
  if (!tensor || tensor->numel() != 1) return false;
  bool zero = false;
  Status read = runtime::dispatch_numeric(tensor->dtype(), [&]<class T>() -> Status {
    zero = static_cast<double>(tensor->data<T>()[0]) == 0.0;
    return {};
  });
  return read.ok() && zero;
}

bool is_inference_dropout(const ir::Node& dropout, const PassContext& context) {
  if (context.opset() < 7) return dropout.attr_int("is_test", 0) == 1;
  if (context.opset() < 12) return true;
  if (drops_nothing(dropout.input(1), context)) return true;
  const ir::Value* training_mode = dropout.input(2);
  if (training_mode == nullptr) return true;
  auto flag = context.constant(training_mode);
  return flag && flag->dtype() == runtime::DataType::boolean && flag->numel() == 1 && !flag->data<bool>()[0];
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_dropout() {
  return make_bypass_pass("eliminate-dropout", "remove Dropout in inference mode or of ratio 0 (its mask unused)", {"Dropout"},
                          is_inference_dropout);
}

}  // namespace onnxkit::passes::eliminate
