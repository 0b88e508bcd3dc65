#pragma once
// Default-domain opsets above the newest that the linked ONNX library's
// version converter knows (17 with Debian's 1.12): onnxkit's own steps,
// one opset at a time, for the operators whose meaning changed on the way
// (analysis/opset_history.h lists every operator that got a new version).
// Most new versions only add types or optional inputs and attributes, so
// an old node means the same under the new opset; the rest are rewritten:
//
//   18  Reduce* (but ReduceSum, done at 13): `axes` attribute -> constant input
//   20  DFT: `axis` attribute (default 1) -> constant input (whose default is -2);
//       GridSample: mode "bilinear" / "bicubic" renamed "linear" / "cubic"
//   21  GroupNormalization: scale and bias per group -> per channel (constant
//       scale and bias are repeated; otherwise the step is refused)

#include <cstdint>

#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::tools {

// The newest opset upgrade_opset_beyond_converter reaches.
inline constexpr int64_t kNewestUpgradableOpset = 21;

// Steps `model`, at opset `from` >= the converter's newest, up to `to`
// (at most kNewestUpgradableOpset), raising the IR version the new opset
// needs. An error names the node and the step it cannot make, and leaves
// the model half-converted: callers work on a copy.
Status upgrade_opset_beyond_converter(ir::Model& model, int64_t to);

}  // namespace onnxkit::tools
