// onnxkit's graph-surgery API in a few lines: the fixes users otherwise write
// in Python with onnx or onnx-graphsurgeon.
//
//   edit_example IN OUT
//
// Sets every InstanceNormalization's epsilon to 1e-5 (TensorRT's minimum),
// bypasses every Identity, makes the batch dynamic, exposes the first Conv's
// output as an extra graph output, then checks the model before writing it.

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include "ir/model.h"

#include "tools/edit.h"

using namespace onnxkit;

static Status fix(const char* in, const char* out) {
  ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> model, ir::load_model(in));

  for (ir::Node* node : tools::find_nodes_by_op(model->graph(), "InstanceNormalization"))
    ONNXKIT_TRY(tools::set_attribute(*node, onnx::MakeAttribute("epsilon", 1e-5f)));

  for (ir::Node* node : tools::find_nodes_by_op(model->graph(), "Identity")) ONNXKIT_TRY(tools::remove_node(*node));

  ONNXKIT_ASSIGN(std::vector<std::string> warnings, tools::set_batch(*model, "batch"));
  for (const std::string& warning : warnings) fmt::print(stderr, "warning: {}\n", warning);

  std::vector<ir::Node*> convs = tools::find_nodes_by_op(model->graph(), "Conv");
  if (!convs.empty()) ONNXKIT_TRY(tools::add_graph_output(*model, *convs.front()->output(0)));

  ONNXKIT_TRY(tools::validate_edited_model(*model));
  ONNXKIT_TRY(ir::save_model(*model, out));
  return {};
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: edit_example IN OUT\n");
    return 2;
  }
  Status done = fix(argv[1], argv[2]);
  if (!done.ok()) {
    fmt::print(stderr, "edit_example: {}\n", done.error().message());
    return 1;
  }
  fmt::print("wrote {}\n", argv[2]);
  return 0;
}
