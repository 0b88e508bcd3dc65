// Recurrent layers: LSTM, GRU and RNN nodes as nn.LSTM / nn.GRU / nn.RNN,
// one module per node (one layer, one or two directions). ONNX and torch
// order the gates differently: LSTM i,o,f,c against torch's i,f,g,o; GRU
// z,r,h against r,z,n; the weights are reordered here. ONNX's Y is
// [seq, directions, batch, hidden]; torch's output [seq, batch, directions *
// hidden]: one view and transpose apart.

#include <fmt/format.h>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {

struct Cell {
  const char* module;      // "nn.LSTM"
  int gates;               // weight blocks per direction
  std::vector<int> order;  // torch's block k is ONNX's block order[k]
};

Status recurrent_module(Emit& e, const Cell& cell);

// ONNX's equations step by step (_onnx_rnn), for what the modules cannot express.
Status recurrent_by_steps(Emit& e, const Cell& cell) {
  // _onnx_rnn takes (x, w, r, b, lengths, h0, c0, p): LSTM's inputs; GRU and RNN stop at h0.
  const size_t count = cell.gates == 4 ? 8 : 6;
  std::vector<std::string> args;
  for (size_t i = 0; i < 8; ++i) {
    if (i >= count || !e.has(i)) {
      args.push_back("None");
      continue;
    }
    ONNXKIT_ASSIGN(std::string a, i == 4 ? e.ints(i) : e.tensor(i));
    args.push_back(a);
  }
  std::vector<std::string> activations;
  if (const ir::Attribute* a = e.node.attribute("activations"))
    for (const std::string& f : a->proto.strings()) activations.push_back(py_str(f));
  std::vector<std::string> alphas, betas;
  for (float v : e.attr_floats("activation_alpha")) alphas.push_back(py_float(v));
  for (float v : e.attr_floats("activation_beta")) betas.push_back(py_float(v));
  const char* kind = cell.gates == 4 ? "LSTM" : cell.gates == 3 ? "GRU" : "RNN";
  std::string call = fmt::format("{}({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", e.helper("onnx_rnn"), py_str(kind),
                                 fmt::join(args, ", "), e.attr_int("hidden_size", 0),
                                 py_str(e.attr_string("direction", "forward")), e.attr_int("layout", 0), py_list(activations),
                                 py_list(alphas), py_list(betas), e.has_attr("clip") ? py_float(e.attr_float("clip", 0)) : "None",
                                 e.attr_int("input_forget", 0), e.attr_int("linear_before_reset", 0));
  std::vector<size_t> outs = {0, 1, 2};
  std::vector<std::string> names;
  for (size_t k : outs) names.push_back(k < e.num_outputs() ? e.output_name(k) : "_");
  e.line(fmt::format("{} = {}  {}", fmt::join(names, ", "), call, e.w.comment(e.node)));
  return {};
}

Status recurrent(Emit& e, const Cell& cell) {
  Status as_module = recurrent_module(e, cell);
  if (as_module.ok()) return {};
  return recurrent_by_steps(e, cell);
}

Status recurrent_module(Emit& e, const Cell& cell) {
  const bool lstm = cell.gates == 4;
  std::string direction = e.attr_string("direction", "forward");
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const int64_t hidden = e.attr_int("hidden_size", 0);
  const bool batch_first = e.attr_int("layout", 0) != 0;
  const runtime::Tensor* w = e.constant(1);
  const runtime::Tensor* r = e.constant(2);
  const runtime::Tensor* b = e.has(3) ? e.constant(3) : nullptr;
  if (w == nullptr || r == nullptr || (e.has(3) && b == nullptr)) return e.fail("W, R and B must be constants to make a module");
  if (w->rank() != 3 || w->dim(0) != directions || hidden <= 0 || w->dim(1) != cell.gates * hidden)
    return e.fail("W's shape does not match hidden_size and direction");
  if (e.has(4)) return e.fail("sequence_lens (sequences of different lengths) is not converted");
  if (e.has_attr("clip")) return e.fail("torch's recurrent layers have no cell clip");
  if (lstm && e.attr_int("input_forget", 0) != 0) return e.fail("torch's LSTM has no coupled input and forget gates");
  if (lstm && e.has(7)) {
    const runtime::Tensor* p = e.constant(7);
    bool zero = p != nullptr && std::all_of(static_cast<const char*>(p->raw()), static_cast<const char*>(p->raw()) + p->nbytes(),
                                            [](char c) { return c == 0; });
    if (!zero) return e.fail("torch's LSTM has no peepholes (P)");
  }
  std::string nonlinearity;
  std::vector<std::string> activations;
  if (const ir::Attribute* a = e.node.attribute("activations"))
    activations.assign(a->proto.strings().begin(), a->proto.strings().end());
  if (cell.gates == 1) {
    std::string f = activations.empty() ? "Tanh" : activations[0];
    if (f != "Tanh" && f != "Relu") return e.fail(fmt::format("torch's RNN takes tanh or relu, not {}", f));
    for (const std::string& other : activations)
      if (other != f) return e.fail("both directions must use the same activation");
    if (f == "Relu") nonlinearity = ", nonlinearity=\"relu\"";
  } else {
    std::vector<std::string> standard =
        lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"} : std::vector<std::string>{"Sigmoid", "Tanh"};
    for (size_t k = 0; k < activations.size(); ++k)
      if (activations[k] != standard[k % standard.size()])
        return e.fail(fmt::format("torch's layer uses the standard activations, not {}", activations[k]));
  }
  if (cell.gates == 3 && e.attr_int("linear_before_reset", 0) == 0)
    return e.fail("torch's GRU applies the reset gate after the recurrent product (linear_before_reset=1); this node has 0");

  const int64_t input = w->dim(2);
  std::vector<ModuleWeight> weights;
  const int64_t gate_rows = cell.gates * hidden;
  for (int64_t d = 0; d < directions; ++d) {
    std::string suffix = d == 1 ? "_reverse" : "";
    weights.push_back({"weight_ih_l0" + suffix, reorder_blocks(w->part(d * gate_rows * input, {gate_rows, input}), cell.order)});
    weights.push_back(
        {"weight_hh_l0" + suffix, reorder_blocks(r->part(d * gate_rows * hidden, {gate_rows, hidden}), cell.order)});
    if (b != nullptr) {
      weights.push_back({"bias_ih_l0" + suffix, reorder_blocks(b->part(d * 2 * gate_rows, {gate_rows}), cell.order)});
      weights.push_back({"bias_hh_l0" + suffix, reorder_blocks(b->part(d * 2 * gate_rows + gate_rows, {gate_rows}), cell.order)});
    }
  }
  std::string options;
  if (b == nullptr) options += ", bias=False";
  if (batch_first) options += ", batch_first=True";
  if (directions == 2) options += ", bidirectional=True";
  std::string m = e.module(fmt::format("{}({}, {}{}{})", cell.module, input, hidden, nonlinearity, options), std::move(weights));

  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  const int seq_axis = batch_first ? 1 : 0;
  // ONNX's reverse direction runs a forward layer over the reversed sequence.
  const bool reverse = direction == "reverse";
  if (reverse) x = fmt::format("{}.flip({})", x, seq_axis);
  // Initial states: ONNX [directions, batch, hidden] as torch's (or batch first with layout 1).
  auto state = [&](size_t i) -> Result<std::string> {
    ONNXKIT_ASSIGN(std::string s, e.tensor(i));
    return batch_first ? s + ".transpose(0, 1).contiguous()" : s;
  };
  std::string hx = "";
  if (e.has(5) || (lstm && e.has(6))) {
    std::string h, c;
    if (e.has(5)) {
      ONNXKIT_ASSIGN(h, state(5));
    }
    if (lstm && e.has(6)) {
      ONNXKIT_ASSIGN(c, state(6));
    }
    if (h.empty()) h = fmt::format("torch.zeros_like({})", c);
    if (lstm && c.empty()) c = fmt::format("torch.zeros_like({})", h);
    hx = lstm ? fmt::format(", ({}, {})", h, c) : ", " + h;
  }
  std::string sequence = e.local(e.has_output(0) ? e.node.output(0)->name() + "_steps" : "steps");
  std::string h_n = e.local(e.has_output(1) ? e.node.output(1)->name() + "_last" : "h_n");
  std::string c_n = lstm ? e.local(e.has_output(2) ? e.node.output(2)->name() + "_last" : "c_n") : "";
  std::string targets = lstm ? fmt::format("{}, ({}, {})", sequence, h_n, c_n) : fmt::format("{}, {}", sequence, h_n);
  e.line(fmt::format("{} = {}({}{})  {}", targets, m, x, hx, e.w.comment(e.node)));
  if (e.has_output(0)) {
    std::string y = reverse ? fmt::format("{}.flip({})", sequence, seq_axis) : sequence;
    // [seq, batch, directions * hidden] -> [seq, directions, batch, hidden] (batch first: [batch, seq, directions, hidden])
    if (batch_first)
      e.assign(0, fmt::format("{y}.reshape({y}.shape[0], {y}.shape[1], {d}, {h})", fmt::arg("y", y), fmt::arg("d", directions),
                              fmt::arg("h", hidden)));
    else
      e.assign(0, fmt::format("{y}.reshape({y}.shape[0], {y}.shape[1], {d}, {h}).transpose(1, 2)", fmt::arg("y", y),
                              fmt::arg("d", directions), fmt::arg("h", hidden)));
  }
  for (size_t k : {size_t{1}, size_t{2}}) {
    if (!e.has_output(k) || (k == 2 && !lstm)) continue;
    std::string s = k == 1 ? h_n : c_n;
    e.assign(k, batch_first ? s + ".transpose(0, 1)" : s);
  }
  return {};
}

Status emit_lstm(Emit& e) { return recurrent(e, {"nn.LSTM", 4, {0, 2, 3, 1}}); }
Status emit_gru(Emit& e) { return recurrent(e, {"nn.GRU", 3, {1, 0, 2}}); }
Status emit_rnn(Emit& e) { return recurrent(e, {"nn.RNN", 1, {0}}); }

}  // namespace

void add_rnn_emitters(EmitterTable& t) {
  t.insert({
      {"LSTM", emit_lstm},
      {"GRU", emit_gru},
      {"RNN", emit_rnn},
  });
}

}  // namespace onnxkit::tools::pytorch
