#include "analysis/opset_history.h"

#include <onnx/defs/schema.h>

#include <array>
#include <utility>

namespace onnxkit::analysis {
namespace {

// (op, the opset that introduced a new version of it), opsets 18 to 21, from
// ONNX's operator changelog.
constexpr std::array<std::pair<std::string_view, int64_t>, 75> kVersions = {{
    {"Pad", 18},
    {"CenterCropPad", 18},
    {"Resize", 18},
    {"Mish", 18},
    {"OptionalGetElement", 18},
    {"OptionalHasElement", 18},
    {"Split", 18},
    {"Col2Im", 18},
    {"ScatterND", 18},
    {"ScatterElements", 18},
    {"ReduceSumSquare", 18},
    {"ReduceLogSum", 18},
    {"ReduceLogSumExp", 18},
    {"ReduceL1", 18},
    {"ReduceL2", 18},
    {"ReduceMax", 18},
    {"ReduceMin", 18},
    {"ReduceMean", 18},
    {"ReduceProd", 18},
    {"BitwiseAnd", 18},
    {"BitwiseOr", 18},
    {"BitwiseXor", 18},
    {"BitwiseNot", 18},
    {"GroupNormalization", 18},
    {"LpPool", 18},
    {"Equal", 19},
    {"AveragePool", 19},
    {"Cast", 19},
    {"CastLike", 19},
    {"Constant", 19},
    {"DeformConv", 19},
    {"DequantizeLinear", 19},
    {"Identity", 19},
    {"If", 19},
    {"Loop", 19},
    {"Pad", 19},
    {"QuantizeLinear", 19},
    {"Resize", 19},
    {"Reshape", 19},
    {"Scan", 19},
    {"Shape", 19},
    {"Size", 19},
    {"AffineGrid", 20},
    {"ConstantOfShape", 20},
    {"DFT", 20},
    {"Gelu", 20},
    {"GridSample", 20},
    {"ImageDecoder", 20},
    {"IsInf", 20},
    {"IsNaN", 20},
    {"ReduceMax", 20},
    {"ReduceMin", 20},
    {"RegexFullMatch", 20},
    {"StringConcat", 20},
    {"StringSplit", 20},
    {"Cast", 21},
    {"CastLike", 21},
    {"Constant", 21},
    {"ConstantOfShape", 21},
    {"DequantizeLinear", 21},
    {"Flatten", 21},
    {"GroupNormalization", 21},
    {"Identity", 21},
    {"If", 21},
    {"Loop", 21},
    {"Pad", 21},
    {"QLinearMatMul", 21},
    {"QuantizeLinear", 21},
    {"Reshape", 21},
    {"Scan", 21},
    {"Shape", 21},
    {"Size", 21},
    {"Squeeze", 21},
    {"Transpose", 21},
    {"Unsqueeze", 21},
}};

}  // namespace

int64_t libonnx_max_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find(onnx::ONNX_DOMAIN);
  return it == ranges.end() ? 0 : it->second.second;
}

bool changed_since_libonnx(std::string_view op_type, int64_t opset) {
  const int64_t known = libonnx_max_opset();
  for (const auto& [op, version] : kVersions)
    if (op == op_type && version > known && version <= opset) return true;
  return false;
}

}  // namespace onnxkit::analysis
