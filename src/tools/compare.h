#pragma once
// Comparing two runs' values, numpy.allclose style: what simplify's check
// uses (and `compare` will).

#include <string>

#include "runtime/value.h"

namespace onnxkit::tools {

struct Difference {
  bool close = true;
  double max_abs_diff = 0;  // over numeric elements
  std::string detail;       // when not close: "shape [1,10] vs [1,12]", "at [0,3]: 0.5 vs 0.75"
};

// |actual - expected| <= atol + rtol * |expected| per element; NaN equals
// NaN; integers, bools and strings exactly; shapes and types must match.
Difference compare_values(const runtime::Value& expected, const runtime::Value& actual, double rtol, double atol);

}  // namespace onnxkit::tools
