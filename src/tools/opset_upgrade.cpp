#include "tools/opset_upgrade.h"

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include <algorithm>
#include <array>
#include <functional>
#include <string_view>

#include "analysis/opset_history.h"
#include "passes/pass.h"
#include "runtime/tensor.h"

namespace onnxkit::tools {
namespace {

using runtime::Tensor;

// An int64 initializer in the node's graph holding `values` (a scalar when `scalar`).
ir::Value* int64_input(passes::PassContext& context, ir::Node& node, std::string_view suffix, const std::vector<int64_t>& values,
                       bool scalar) {
  const runtime::Shape shape = scalar ? runtime::Shape{} : runtime::Shape{static_cast<int64_t>(values.size())};
  const std::string stem = node.name().empty() ? node.output(0)->name() : node.name();
  return context.add_constant(*node.graph(), stem + std::string(suffix), Tensor::from<int64_t>(shape, values));
}

// 17 -> 18: the reductions other than ReduceSum take their axes as an input.
Status reduce_axes_as_input(ir::Node& node, passes::PassContext& context) {
  static constexpr std::array<std::string_view, 9> kReductions = {"ReduceL1",        "ReduceL2",   "ReduceLogSum",
                                                                  "ReduceLogSumExp", "ReduceMax",  "ReduceMean",
                                                                  "ReduceMin",       "ReduceProd", "ReduceSumSquare"};
  if (std::find(kReductions.begin(), kReductions.end(), node.op_type()) == kReductions.end() || node.attribute("axes") == nullptr)
    return {};
  const std::vector<int64_t> axes = node.attr_ints("axes");
  node.remove_attribute("axes");
  node.set_input(1, int64_input(context, node, "_axes", axes, false));
  return {};
}

// 19 -> 20: DFT's axis becomes an input, GridSample's modes are renamed.
Status dft_and_grid_sample(ir::Node& node, passes::PassContext& context) {
  if (node.op_type() == "DFT") {
    const int64_t axis = node.attr_int("axis", 1);  // DFT-17's default; DFT-20's input defaults to -2
    node.remove_attribute("axis");
    node.set_input(2, int64_input(context, node, "_axis", {axis}, true));
  } else if (node.op_type() == "GridSample") {
    const std::string mode = node.attr_string("mode", "bilinear");
    const std::string renamed = mode == "bilinear" ? "linear" : mode == "bicubic" ? "cubic" : mode;
    node.set_attribute(onnx::MakeAttribute("mode", renamed));
  }
  return {};
}

// 20 -> 21: GroupNormalization's scale and bias go from one value per group
// to one per channel; group g covers channels g*C/G to (g+1)*C/G - 1.
Status group_norm_per_channel(ir::Node& node, passes::PassContext& context) {
  if (node.op_type() != "GroupNormalization") return {};
  const int64_t groups = node.attr_int("num_groups", 0);
  auto x_shape = node.input(0) != nullptr ? node.input(0)->static_shape() : std::nullopt;
  const int64_t channels = x_shape && x_shape->size() >= 2 ? (*x_shape)[1] : -1;
  if (groups <= 0 || channels <= 0 || channels % groups != 0)
    return make_error(
        "{}: its channel count is not known (or not a multiple of num_groups), so its per-group scale "
        "and bias cannot become GroupNormalization-21's per-channel ones",
        node.describe());
  for (size_t index : {size_t{1}, size_t{2}}) {
    auto per_group = context.constant(node.input(index));
    if (!per_group || per_group->numel() != groups)
      return make_error(
          "{}: input {} is not a constant of num_groups values, so it cannot be repeated per channel "
          "for GroupNormalization-21",
          node.describe(), index);
    Tensor per_channel(per_group->dtype(), {channels});
    const size_t width = runtime::element_size(per_group->dtype());
    const auto* from = static_cast<const unsigned char*>(per_group->raw());
    auto* to = static_cast<unsigned char*>(per_channel.mutable_raw());
    for (int64_t c = 0; c < channels; ++c)
      std::copy_n(from + static_cast<size_t>(c / (channels / groups)) * width, width, to + static_cast<size_t>(c) * width);
    node.set_input(index, context.add_constant(*node.graph(), node.input(index)->name() + "_per_channel", per_channel));
  }
  return {};
}

struct Step {
  int64_t opset;       // the step from opset - 1 to opset
  int64_t ir_version;  // the IR version that opset needs
  std::function<Status(ir::Node&, passes::PassContext&)> adapt;
};

const std::vector<Step>& steps() {
  static const std::vector<Step> table = {
      {18, 8, reduce_axes_as_input},
      {19, 9, nullptr},
      {20, 9, dft_and_grid_sample},
      {21, 10, group_norm_per_channel},
  };
  return table;
}

}  // namespace

Status upgrade_opset_beyond_converter(ir::Model& model, int64_t to) {
  const int64_t from = model.opset("");
  if (from < analysis::libonnx_max_opset() || to > kNewestUpgradableOpset)
    return make_error("onnxkit's own opset steps go from {} to {}, not from {} to {}", analysis::libonnx_max_opset(),
                      kNewestUpgradableOpset, from, to);
  passes::PassOptions options;
  passes::PassContext context(model, options);
  for (const Step& step : steps()) {
    if (step.opset <= from || step.opset > to) continue;
    Status status;
    if (step.adapt)
      model.graph().for_each_graph([&](ir::Graph& graph) {
        for (ir::Node& node : graph.nodes())
          if (status.ok() && node.in_onnx_domain()) status = step.adapt(node, context);
      });
    if (!status.ok()) return status.error().in(fmt::format("step from opset {} to {}", step.opset - 1, step.opset));
    model.set_opset("", step.opset);
    if (model.header().ir_version() < step.ir_version) model.mutable_header().set_ir_version(step.ir_version);
  }
  return {};
}

}  // namespace onnxkit::tools
