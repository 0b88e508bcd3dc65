#pragma once
// `convert --dtype fp16|bf16`: a float32 model's weights and arithmetic moved
// to a 16-bit float type, as ONNX Runtime's float16 converter does. Which
// inputs and outputs of an op may take the 16-bit type is read from the op's
// schema, so an input that must stay float32 (Resize's scales, Range's
// operands, NonMaxSuppression's boxes) stays so, with Cast nodes between.

#include <map>
#include <string>
#include <vector>

#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::tools {

enum class LowFloat { float16, bfloat16 };

// "fp16"/"float16" or "bf16"/"bfloat16".
Result<LowFloat> parse_low_float(std::string_view text);
const char* to_string(LowFloat type);

struct PrecisionOptions {
  LowFloat type = LowFloat::float16;
  // The main graph's inputs and outputs stay float32, with Casts after the
  // inputs and before the outputs (callers feed and read what they did).
  bool keep_io_types = false;
  // Op types computed in float32 whatever their schema allows.
  std::vector<std::string> keep_ops;
};

struct PrecisionReport {
  size_t tensors = 0;    // initializers and Constant values now 16-bit
  size_t saturated = 0;  // weights beyond float16's range, set to its largest finite value
  size_t casts = 0;      // Cast nodes added
  // Op type -> nodes with a float32 input or output kept, and why.
  std::map<std::string, std::pair<size_t, std::string>> kept;
};

// Rewrites `model` in place. Float64 and integer tensors are left as they
// are; so are sparse initializers (as float32).
Result<PrecisionReport> lower_float_precision(ir::Model& model, const PrecisionOptions& options);

}  // namespace onnxkit::tools
