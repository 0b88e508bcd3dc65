// Control flow: If, Loop, Scan. Their bodies are sub-graph plans built with
// the node (KernelInfo::subgraph) and run in the node's scope
// (KernelContext::run_subgraph), so bodies read outer values directly.

#include <fmt/format.h>

#include <iterator>

#include "runtime/executor.h"
#include "runtime/kernels/common.h"

namespace onnxkit::runtime {
namespace {

Result<bool> condition_of(const Datum& v, const char* what) {
  if (!v.is_tensor() || v.tensor().dtype() != DataType::boolean || v.tensor().numel() != 1)
    return make_error("{} must be a single bool, got {}", what, v.describe());
  return v.tensor().data<bool>()[0];
}

// The element type a body declares for output `index` (for empty results).
DataType declared_type(const GraphPlan& plan, size_t index) {
  const auto& outputs = plan.graph->outputs();
  if (index >= outputs.size()) return DataType::float32;
  int32_t t = outputs[index]->elem_type();
  return t != 0 ? static_cast<DataType>(t) : DataType::float32;
}

// A rank-0 tensor holding `value`.
template <class T> Tensor scalar_of(T value) {
  Tensor t(data_type_of<T>(), {});
  t.mutable_data<T>()[0] = value;
  return t;
}

// Stacks equally shaped tensors along a new axis 0 (axis `axis` in general).
Result<Tensor> stack(const std::vector<Tensor>& items, int64_t axis, DataType empty_type) {
  if (items.empty()) return Tensor(empty_type, {0});
  const Shape& item = items[0].shape();
  for (const Tensor& t : items)
    if (t.shape() != item || t.dtype() != items[0].dtype())
      return make_error("scan output changes shape across iterations ({} then {})", shape_to_string(item),
                        shape_to_string(t.shape()));
  ONNXKIT_ASSIGN(int64_t a, normalize_axis(axis, static_cast<int64_t>(item.size()) + 1));
  Shape shape = item;
  shape.insert(shape.begin() + a, static_cast<int64_t>(items.size()));
  Tensor out(items[0].dtype(), shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a; ++d) outer *= item[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(a); d < item.size(); ++d) inner *= item[d];
  for (size_t k = 0; k < items.size(); ++k)
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(items[k], o * inner, out, (o * static_cast<int64_t>(items.size()) + static_cast<int64_t>(k)) * inner, inner);
  return out;
}

// Slice `index` of `t` along `axis`, without that axis.
Tensor slice_at(const Tensor& t, size_t axis, int64_t index) {
  Shape shape = t.shape();
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  std::vector<int64_t> strides = contiguous_strides(t.shape());
  const int64_t step = strides[axis];
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(axis));
  Tensor out(t.dtype(), shape);
  copy_strided(t, index * step, strides, out);
  return out;
}

KernelFactory if_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(auto then_plan, info.subgraph("then_branch"));
    ONNXKIT_ASSIGN(auto else_plan, info.subgraph("else_branch"));
    for (const auto* plan : {then_plan.get(), else_plan.get()})
      if (plan->outputs.size() != info.num_outputs())
        return make_error("a branch returns {} values for {} outputs", plan->outputs.size(), info.num_outputs());
    return ComputeFn([then_plan, else_plan](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(bool taken, condition_of(ctx.input_value(0), "the condition"));
      ONNXKIT_ASSIGN(std::vector<Datum> results, ctx.run_subgraph(taken ? *then_plan : *else_plan, {}));
      for (size_t i = 0; i < results.size(); ++i) ctx.set_output(i, std::move(results[i]));
      return {};
    });
  });
}

KernelFactory loop_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(auto body, info.subgraph("body"));
    const size_t carried = info.num_inputs() >= 2 ? info.num_inputs() - 2 : 0;
    if (body->inputs.size() != carried + 2)
      return make_error("body takes {} inputs, expected {} (iteration, condition, {} carried)", body->inputs.size(), carried + 2,
                        carried);
    if (body->outputs.size() < carried + 1)
      return make_error("body returns {} values, expected at least {}", body->outputs.size(), carried + 1);
    const size_t scans = body->outputs.size() - 1 - carried;
    if (info.num_outputs() > carried + scans)
      return make_error("has {} outputs, the body gives {} carried and {} scan values", info.num_outputs(), carried, scans);
    return ComputeFn([body, carried, scans](KernelContext& ctx) -> Status {
      std::optional<int64_t> trip_limit;
      if (ctx.has_input(0)) {
        ONNXKIT_ASSIGN(const Tensor* m, ctx.tensor(0));
        ONNXKIT_ASSIGN(std::vector<int64_t> mv, read_int64s(*m));
        if (mv.size() != 1) return make_error("M must be a scalar");
        trip_limit = mv[0];
      }
      bool keep_going = true;
      if (ctx.has_input(1)) {
        ONNXKIT_ASSIGN(keep_going, condition_of(ctx.input_value(1), "cond"));
      }
      std::vector<Datum> state;
      for (size_t i = 0; i < carried; ++i) state.push_back(ctx.has_input(i + 2) ? ctx.input_value(i + 2) : Datum());
      std::vector<std::vector<Tensor>> scanned(scans);
      for (int64_t i = 0; keep_going && (!trip_limit || i < *trip_limit); ++i) {
        std::vector<Datum> inputs;
        inputs.reserve(2 + carried);
        inputs.emplace_back(scalar_of(i));
        inputs.emplace_back(scalar_of(keep_going));
        // The body's outputs replace the state: hand it over, no copies.
        std::move(state.begin(), state.end(), std::back_inserter(inputs));
        ONNXKIT_ASSIGN(std::vector<Datum> out, ctx.run_subgraph(*body, std::move(inputs)));
        ONNXKIT_ASSIGN(keep_going, condition_of(out[0], "the body's condition output"));
        for (size_t k = 0; k < carried; ++k) state[k] = std::move(out[1 + k]);
        for (size_t k = 0; k < scans; ++k) {
          if (!out[1 + carried + k].is_tensor()) return make_error("scan output {} is not a tensor", k);
          scanned[k].push_back(out[1 + carried + k].tensor());
        }
      }
      for (size_t k = 0; k < carried && k < ctx.num_outputs(); ++k) ctx.set_output(k, std::move(state[k]));
      for (size_t k = 0; k < scans && carried + k < ctx.num_outputs(); ++k) {
        ONNXKIT_ASSIGN(Tensor stacked, stack(scanned[k], 0, declared_type(*body, 1 + carried + k)));
        ctx.set_output(carried + k, std::move(stacked));
      }
      return {};
    });
  });
}

struct ScanConfig {
  size_t states = 0, scan_inputs = 0, scan_outputs = 0;
  std::vector<int64_t> input_axes, input_directions, output_axes, output_directions;
};

Result<ScanConfig> scan_config(const KernelInfo& info, const GraphPlan& body, size_t first_input) {
  ScanConfig c;
  c.scan_inputs = static_cast<size_t>(info.attr_int("num_scan_inputs", 0));
  const size_t given = info.num_inputs() - first_input;
  if (c.scan_inputs == 0 || c.scan_inputs > given)
    return make_error("num_scan_inputs {} does not fit {} inputs", c.scan_inputs, given);
  c.states = given - c.scan_inputs;
  if (body.inputs.size() != c.states + c.scan_inputs)
    return make_error("body takes {} inputs, expected {}", body.inputs.size(), c.states + c.scan_inputs);
  if (body.outputs.size() < c.states) return make_error("body returns fewer values than the {} states", c.states);
  c.scan_outputs = body.outputs.size() - c.states;
  c.input_axes = info.attr_ints("scan_input_axes", std::vector<int64_t>(c.scan_inputs, 0));
  c.input_directions =
      info.attr_ints("scan_input_directions", info.attr_ints("directions", std::vector<int64_t>(c.scan_inputs, 0)));
  c.output_axes = info.attr_ints("scan_output_axes", std::vector<int64_t>(c.scan_outputs, 0));
  c.output_directions = info.attr_ints("scan_output_directions", std::vector<int64_t>(c.scan_outputs, 0));
  if (c.input_axes.size() != c.scan_inputs || c.input_directions.size() != c.scan_inputs ||
      c.output_axes.size() != c.scan_outputs || c.output_directions.size() != c.scan_outputs)
    return make_error("scan axes or directions do not match the number of scan inputs and outputs");
  return c;
}

// One Scan (opset 9 form) over tensors: returns the final states then the
// stacked scan outputs.
Result<std::vector<Datum>> run_scan(KernelContext& ctx, const GraphPlan& body, const ScanConfig& c, std::vector<Datum> states,
                                    const std::vector<const Tensor*>& inputs) {
  int64_t length = -1;
  std::vector<size_t> axes;
  for (size_t j = 0; j < c.scan_inputs; ++j) {
    ONNXKIT_ASSIGN(int64_t axis, normalize_axis(c.input_axes[j], static_cast<int64_t>(inputs[j]->rank())));
    axes.push_back(static_cast<size_t>(axis));
    int64_t n = inputs[j]->dim(static_cast<size_t>(axis));
    if (length >= 0 && n != length) return make_error("scan inputs have different lengths ({} and {})", length, n);
    length = n;
  }
  std::vector<std::vector<Tensor>> scanned(c.scan_outputs);
  for (int64_t i = 0; i < length; ++i) {
    std::vector<Datum> body_inputs = states;
    for (size_t j = 0; j < c.scan_inputs; ++j)
      body_inputs.emplace_back(slice_at(*inputs[j], axes[j], c.input_directions[j] ? length - 1 - i : i));
    ONNXKIT_ASSIGN(std::vector<Datum> out, ctx.run_subgraph(body, std::move(body_inputs)));
    for (size_t k = 0; k < c.states; ++k) states[k] = std::move(out[k]);
    for (size_t k = 0; k < c.scan_outputs; ++k) {
      if (!out[c.states + k].is_tensor()) return make_error("scan output {} is not a tensor", k);
      scanned[k].push_back(out[c.states + k].tensor());
    }
  }
  std::vector<Datum> results = std::move(states);
  for (size_t k = 0; k < c.scan_outputs; ++k) {
    if (c.output_directions[k]) std::reverse(scanned[k].begin(), scanned[k].end());
    ONNXKIT_ASSIGN(Tensor stacked, stack(scanned[k], c.output_axes[k], declared_type(body, c.states + k)));
    results.emplace_back(std::move(stacked));
  }
  return results;
}

KernelFactory scan_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(auto body, info.subgraph("body"));
    ONNXKIT_ASSIGN(ScanConfig config, scan_config(info, *body, 0));
    return ComputeFn([body, config](KernelContext& ctx) -> Status {
      std::vector<Datum> states;
      for (size_t i = 0; i < config.states; ++i) states.push_back(ctx.input_value(i));
      std::vector<const Tensor*> inputs;
      for (size_t j = 0; j < config.scan_inputs; ++j) {
        ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(config.states + j));
        inputs.push_back(t);
      }
      ONNXKIT_ASSIGN(std::vector<Datum> results, run_scan(ctx, *body, config, std::move(states), inputs));
      for (size_t i = 0; i < results.size() && i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(results[i]));
      return {};
    });
  });
}

// Scan-8: a leading batch axis on every state and scan input, scanned along
// axis 1, with optional per-batch sequence lengths (input 0).
KernelFactory scan8_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(auto body, info.subgraph("body"));
    ONNXKIT_ASSIGN(ScanConfig config, scan_config(info, *body, 1));
    return ComputeFn([body, config](KernelContext& ctx) -> Status {
      if (ctx.has_input(0)) return make_error("Scan-8 sequence_lens is not supported; use opset 9 or later");
      std::vector<const Tensor*> all;
      for (size_t i = 1; i < ctx.num_inputs(); ++i) {
        ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
        if (t->rank() == 0) return make_error("input {} lacks the batch axis", i);
        all.push_back(t);
      }
      const int64_t batch = all[0]->dim(0);
      std::vector<std::vector<Datum>> per_batch;
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<Datum> states;
        std::vector<Tensor> slices;
        for (size_t i = 0; i < all.size(); ++i) {
          if (all[i]->dim(0) != batch) return make_error("inputs disagree on the batch size");
          slices.push_back(slice_at(*all[i], 0, b));
        }
        for (size_t i = 0; i < config.states; ++i) states.emplace_back(slices[i]);
        std::vector<const Tensor*> inputs;
        for (size_t j = 0; j < config.scan_inputs; ++j) inputs.push_back(&slices[config.states + j]);
        ONNXKIT_ASSIGN(std::vector<Datum> results, run_scan(ctx, *body, config, std::move(states), inputs));
        per_batch.push_back(std::move(results));
      }
      for (size_t k = 0; k < ctx.num_outputs(); ++k) {
        std::vector<Tensor> items;
        for (auto& r : per_batch) items.push_back(r[k].tensor());
        ONNXKIT_ASSIGN(Tensor stacked, stack(items, 0, declared_type(*body, k)));
        ctx.set_output(k, std::move(stacked));
      }
      return {};
    });
  });
}

}  // namespace

void register_control_kernels(KernelRegistry& r) {
  r.add("", "If", 1, kLatestOpset, if_kernel());
  r.add("", "Loop", 1, kLatestOpset, loop_kernel());
  r.add("", "Scan", 8, 8, scan8_kernel());
  r.add("", "Scan", 9, kLatestOpset, scan_kernel());
}

}  // namespace onnxkit::runtime
