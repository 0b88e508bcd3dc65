#pragma once
// A node's input and output counts against its operator's ONNX schema: what
// the checker holds nodes to, and what the runtime checks once for every
// kernel, so that a kernel reads the inputs and writes the outputs its schema
// requires without checking each (a Relu given two inputs is refused, a node
// with no outputs never reaches a kernel that writes output 0).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxkit::analysis {

// `inputs` and `outputs` say, position by position, whether each is given
// (an omitted optional one is listed as false). Returns what is wrong, e.g.
// "Relu takes 1 input, got 2", or "" when they fit. Operators changed after
// the linked ONNX library's newest opset (opset_history.h) are held to the
// minimum counts of the schema it has (a newer version may take more, never
// fewer); operators of the default domain it does not know, to one output;
// other domains are not checked.
std::string arity_problem(std::string_view domain, std::string_view op_type, int64_t opset, const std::vector<bool>& inputs,
                          const std::vector<bool>& outputs);

}  // namespace onnxkit::analysis
