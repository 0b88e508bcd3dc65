// Control flow and sequences: If becomes a Python if, Loop a for/while,
// Scan a for over slices, SequenceMap a for over items; sub-graph nodes are
// written inside the block, reading the enclosing values by their names.
// ONNX sequences are Python lists; optionals a tensor or None.

#include <fmt/format.h>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {

const ir::Graph* subgraph(Emit& e, std::string_view name) {
  const ir::Attribute* a = e.node.attribute(name);
  return a != nullptr ? a->graph.get() : nullptr;
}

// A graph output's expression after its block: a tensor, or a list for sequences.
Result<std::string> result_of(Writer& w, const ir::Value* v) {
  if (const PyValue* py = w.find(v); py != nullptr && (py->kind == Kind::sequence || py->kind == Kind::none)) return py->expr;
  return w.as_tensor(v);
}

Kind kind_of(Writer& w, const ir::Value* v) {
  const PyValue* py = w.find(v);
  return py != nullptr && py->kind == Kind::sequence ? Kind::sequence : Kind::tensor;
}

// `a, b = x, y` (one statement: the right side reads the old values).
std::string parallel_assignment(const std::vector<std::string>& targets, const std::vector<std::string>& values) {
  if (targets.size() == 1) return fmt::format("{} = {}", targets[0], values[0]);
  return fmt::format("{} = {}", fmt::join(targets, ", "), fmt::join(values, ", "));
}

Status emit_if(Emit& e) {
  const ir::Graph* then_graph = subgraph(e, "then_branch");
  const ir::Graph* else_graph = subgraph(e, "else_branch");
  if (then_graph == nullptr || else_graph == nullptr) return e.fail("then_branch and else_branch are required");
  if (then_graph->outputs().size() != e.num_outputs() || else_graph->outputs().size() != e.num_outputs())
    return e.fail("the branches must return one value per output");
  ONNXKIT_ASSIGN(std::string cond, e.tensor(0));
  std::vector<std::string> names;
  for (size_t k = 0; k < e.num_outputs(); ++k) names.push_back(e.output_name(k));
  e.line(fmt::format("if bool({}):  {}", cond, e.w.comment(e.node)));
  for (const ir::Graph* branch : {then_graph, else_graph}) {
    if (branch == else_graph) e.line("else:");
    ONNXKIT_ASSIGN(std::vector<std::string> body, e.w.emit_block(*branch));
    e.w.append(body);
    std::vector<std::string> values;
    for (size_t k = 0; k < e.num_outputs(); ++k) {
      ONNXKIT_ASSIGN(std::string v, result_of(e.w, branch->outputs()[k]));
      values.push_back(v);
      if (kind_of(e.w, branch->outputs()[k]) == Kind::sequence && e.has_output(k))
        e.w.bind(e.node.output(k), {Kind::sequence, names[k]});
    }
    if (values.empty() && body.empty()) e.line("    pass");
    else if (!values.empty()) e.line("    " + parallel_assignment(names, values));
  }
  return {};
}

// Loop and Scan hold their loop-carried values in their outputs' names:
// set from the inputs before the loop, reassigned at the end of each pass.
Status emit_loop(Emit& e) {
  const ir::Graph* body = subgraph(e, "body");
  if (body == nullptr) return e.fail("body is required");
  const size_t carried = e.num_inputs() >= 2 ? e.num_inputs() - 2 : 0;
  if (body->inputs().size() != carried + 2 || body->outputs().size() < carried + 1)
    return e.fail("the body's inputs and outputs do not match the loop's");
  const size_t scans = body->outputs().size() - 1 - carried;
  std::optional<int64_t> trips =
      e.has(0) && e.constant_ints(0) ? std::optional<int64_t>(e.constant_ints(0)->at(0)) : std::nullopt;
  bool counted = e.has(0) && !(trips && *trips >= (int64_t{1} << 31) && e.has(1));
  if (!counted && !e.has(1)) return e.fail("a loop with neither a trip count nor a condition never ends");

  std::vector<std::string> names, inits;
  std::vector<Kind> kinds;
  for (size_t k = 0; k < carried; ++k) {
    // Sequences (and optional sequences) stay lists; everything else a tensor.
    kinds.push_back(e.kind(k + 2) == Kind::sequence || e.kind(k + 2) == Kind::none ? e.kind(k + 2) : Kind::tensor);
    std::string init;
    if (kinds[k] == Kind::tensor) {
      ONNXKIT_ASSIGN(init, e.tensor(k + 2));
    } else {
      init = e.value(k + 2)->expr;
    }
    names.push_back(e.output_name(k));
    if (kinds[k] != Kind::tensor) e.w.bind(e.node.output(k), {Kind::sequence, names[k]});
    inits.push_back(init);
  }
  if (!names.empty()) e.line(fmt::format("{}  {}", parallel_assignment(names, inits), e.w.comment(e.node)));
  std::vector<std::string> lists;
  for (size_t j = 0; j < scans; ++j) {
    lists.push_back(e.local(e.has_output(carried + j) ? e.node.output(carried + j)->name() + "_steps" : "steps"));
    e.line(fmt::format("{} = []", lists.back()));
  }
  std::string keep;
  if (e.has(1)) {
    keep = e.local("keep_going");
    ONNXKIT_ASSIGN(std::string cond, e.tensor(1));
    e.line(fmt::format("{} = bool({})", keep, cond));
  }
  const ir::Value* iteration = body->inputs()[0];
  std::string counter = e.local(iteration->name());
  if (counted) {
    ONNXKIT_ASSIGN(std::string m, e.integer(0));
    e.line(fmt::format("for {} in range({}):  {}", counter, m, e.w.comment(e.node)));
    if (!keep.empty()) {
      e.line(fmt::format("    if not {}:", keep));
      e.line("        break");
    }
  } else {
    e.line(fmt::format("{} = 0", counter));
    e.line(fmt::format("while {}:  {}", keep, e.w.comment(e.node)));
  }
  e.w.bind(iteration, {Kind::integer, counter, onnx::TensorProto::INT64});
  e.w.bind(body->inputs()[1],
           {Kind::tensor, keep.empty() ? "torch.tensor(True)" : fmt::format("torch.tensor({})", keep), onnx::TensorProto::BOOL});
  for (size_t k = 0; k < carried; ++k)
    e.w.bind(body->inputs()[k + 2], {kinds[k] == Kind::tensor ? Kind::tensor : Kind::sequence, names[k], e.dtype(k + 2)});
  ONNXKIT_ASSIGN(std::vector<std::string> lines, e.w.emit_block(*body));
  e.w.append(lines);

  std::vector<std::string> targets, values;
  if (!keep.empty()) {
    ONNXKIT_ASSIGN(std::string c, e.w.as_tensor(body->outputs()[0]));
    targets.push_back(keep);
    values.push_back(fmt::format("bool({})", c));
  }
  for (size_t k = 0; k < carried; ++k) {
    ONNXKIT_ASSIGN(std::string v, result_of(e.w, body->outputs()[k + 1]));
    targets.push_back(names[k]);
    values.push_back(v);
  }
  for (size_t j = 0; j < scans; ++j) {
    ONNXKIT_ASSIGN(std::string v, e.w.as_tensor(body->outputs()[1 + carried + j]));
    e.line("    " + fmt::format("{}.append({})", lists[j], v));
  }
  if (!targets.empty()) e.line("    " + parallel_assignment(targets, values));
  if (!counted) e.line(fmt::format("    {} += 1", counter));
  if (targets.empty() && lines.empty() && scans == 0) e.line("    pass");
  for (size_t j = 0; j < scans; ++j)
    if (e.has_output(carried + j)) e.assign(carried + j, fmt::format("torch.stack({})", lists[j]));
  return {};
}

Status emit_scan(Emit& e) {
  const ir::Graph* body = subgraph(e, "body");
  if (body == nullptr) return e.fail("body is required");
  if (e.opset < 9) return e.fail("Scan-8 (with a batch axis and sequence_lens) is not converted");
  const size_t scan_inputs = static_cast<size_t>(e.attr_int("num_scan_inputs", 0));
  if (scan_inputs == 0 || scan_inputs > e.num_inputs()) return e.fail("num_scan_inputs is out of range");
  const size_t states = e.num_inputs() - scan_inputs;
  const size_t scan_outputs = e.num_outputs() - states;
  auto in_axes = e.attr_ints("scan_input_axes"), in_dirs = e.attr_ints("scan_input_directions");
  auto out_axes = e.attr_ints("scan_output_axes"), out_dirs = e.attr_ints("scan_output_directions");
  in_axes.resize(scan_inputs, 0);
  in_dirs.resize(scan_inputs, 0);
  out_axes.resize(scan_outputs, 0);
  out_dirs.resize(scan_outputs, 0);

  std::vector<std::string> names, inits, xs;
  for (size_t k = 0; k < states; ++k) {
    ONNXKIT_ASSIGN(std::string init, e.tensor(k));
    names.push_back(e.output_name(k));
    inits.push_back(init);
  }
  if (!names.empty()) e.line(fmt::format("{}  {}", parallel_assignment(names, inits), e.w.comment(e.node)));
  for (size_t j = 0; j < scan_inputs; ++j) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(states + j));
    xs.push_back(x);
  }
  std::vector<std::string> lists;
  for (size_t j = 0; j < scan_outputs; ++j) {
    lists.push_back(e.local(e.has_output(states + j) ? e.node.output(states + j)->name() + "_steps" : "steps"));
    e.line(fmt::format("{} = []", lists.back()));
  }
  std::string t = e.local("t");
  e.line(fmt::format("for {} in range({}.shape[{}]):  {}", t, xs[0], in_axes[0], e.w.comment(e.node)));
  for (size_t k = 0; k < states; ++k) e.w.bind(body->inputs()[k], {Kind::tensor, names[k], e.dtype(k)});
  for (size_t j = 0; j < scan_inputs; ++j) {
    std::string at = in_dirs[j] != 0 ? fmt::format("{}.shape[{}] - 1 - {}", xs[j], in_axes[j], t) : t;
    e.w.bind(body->inputs()[states + j],
             {Kind::tensor, fmt::format("{}.select({}, {})", xs[j], in_axes[j], at), e.dtype(states + j)});
  }
  ONNXKIT_ASSIGN(std::vector<std::string> lines, e.w.emit_block(*body));
  e.w.append(lines);
  std::vector<std::string> values;
  for (size_t k = 0; k < states; ++k) {
    ONNXKIT_ASSIGN(std::string v, e.w.as_tensor(body->outputs()[k]));
    values.push_back(v);
  }
  for (size_t j = 0; j < scan_outputs; ++j) {
    ONNXKIT_ASSIGN(std::string v, e.w.as_tensor(body->outputs()[states + j]));
    e.line("    " + fmt::format("{}.append({})", lists[j], v));
  }
  if (!names.empty()) e.line("    " + parallel_assignment(names, values));
  if (names.empty() && lines.empty() && scan_outputs == 0) e.line("    pass");
  for (size_t j = 0; j < scan_outputs; ++j) {
    if (!e.has_output(states + j)) continue;
    std::string steps = out_dirs[j] != 0 ? lists[j] + "[::-1]" : lists[j];
    e.assign(states + j, fmt::format("torch.stack({}, dim={})", steps, out_axes[j]));
  }
  return {};
}

// --- sequences and optionals -------------------------------------------------------

void assign_sequence(Emit& e, const std::string& expr) { e.assign(0, expr, Kind::sequence); }

Result<std::string> sequence(Emit& e, size_t i) {
  const PyValue* py = e.value(i);
  if (py == nullptr || py->kind != Kind::sequence) return e.fail(fmt::format("input {} is not a sequence", i));
  return py->expr;
}

Status emit_sequence_empty(Emit& e) {
  assign_sequence(e, "[]");
  return {};
}

Status emit_sequence_construct(Emit& e) {
  std::vector<std::string> xs;
  for (size_t i = 0; i < e.num_inputs(); ++i) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(i));
    xs.push_back(x);
  }
  assign_sequence(e, py_list(xs));
  return {};
}

Status emit_sequence_at(Emit& e) {
  ONNXKIT_ASSIGN(std::string s, sequence(e, 0));
  ONNXKIT_ASSIGN(std::string p, e.integer(1));
  e.assign(0, fmt::format("{}[{}]", s, p));
  return {};
}

Status emit_sequence_insert(Emit& e) {
  ONNXKIT_ASSIGN(std::string s, sequence(e, 0));
  ONNXKIT_ASSIGN(std::string t, e.tensor(1));
  if (!e.has(2)) {
    assign_sequence(e, fmt::format("{} + [{}]", s, t));
    return {};
  }
  ONNXKIT_ASSIGN(std::string p, e.integer(2));
  // A negative position counts from the back, as Python's slices do.
  assign_sequence(e, fmt::format("{s}[:{p}] + [{t}] + {s}[{p}:]", fmt::arg("s", s), fmt::arg("p", p), fmt::arg("t", t)));
  return {};
}

Status emit_sequence_erase(Emit& e) {
  ONNXKIT_ASSIGN(std::string s, sequence(e, 0));
  std::string p = "-1";
  if (e.has(1)) {
    ONNXKIT_ASSIGN(p, e.integer(1));
  }
  assign_sequence(e, fmt::format("[t for k, t in enumerate({s}) if k != {p} % len({s})]", fmt::arg("s", s), fmt::arg("p", p)));
  return {};
}

Status emit_sequence_length(Emit& e) {
  ONNXKIT_ASSIGN(std::string s, sequence(e, 0));
  e.assign(0, fmt::format("len({})", s), Kind::integer);
  return {};
}

Status emit_split_to_sequence(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t axis = e.attr_int("axis", 0);
  if (!e.has(1)) {
    if (e.attr_int("keepdims", 1) == 0) assign_sequence(e, fmt::format("list(torch.unbind({}, {}))", x, axis));
    else assign_sequence(e, fmt::format("list(torch.split({}, 1, dim={}))", x, axis));
    return {};
  }
  std::string split;
  if (e.rank(1) && *e.rank(1) == 0) {
    ONNXKIT_ASSIGN(split, e.integer(1));
  } else {
    ONNXKIT_ASSIGN(split, e.ints(1));
  }
  assign_sequence(e, fmt::format("list(torch.split({}, {}, dim={}))", x, split, axis));
  return {};
}

Status emit_concat_from_sequence(Emit& e) {
  ONNXKIT_ASSIGN(std::string s, sequence(e, 0));
  int64_t axis = e.attr_int("axis", 0);
  e.assign(0, fmt::format("torch.{}({}, dim={})", e.attr_int("new_axis", 0) != 0 ? "stack" : "cat", s, axis));
  return {};
}

Status emit_sequence_map(Emit& e) {
  const ir::Graph* body = subgraph(e, "body");
  if (body == nullptr) return e.fail("body is required");
  ONNXKIT_ASSIGN(std::string first, sequence(e, 0));
  std::vector<std::string> lists;
  for (size_t k = 0; k < e.num_outputs(); ++k) {
    lists.push_back(e.output_name(k));
    e.w.bind(e.node.output(k), {Kind::sequence, lists.back()});
  }
  e.line(fmt::format("{}  {}", parallel_assignment(lists, std::vector<std::string>(lists.size(), "[]")), e.w.comment(e.node)));
  std::string i = e.local("i");
  e.line(fmt::format("for {} in range(len({})):", i, first));
  for (size_t k = 0; k < e.num_inputs(); ++k) {
    if (e.kind(k) == Kind::sequence) {
      e.w.bind(body->inputs()[k], {Kind::tensor, fmt::format("{}[{}]", e.value(k)->expr, i), e.dtype(k)});
    } else {
      ONNXKIT_ASSIGN(std::string x, e.tensor(k));
      e.w.bind(body->inputs()[k], {Kind::tensor, x, e.dtype(k)});
    }
  }
  ONNXKIT_ASSIGN(std::vector<std::string> lines, e.w.emit_block(*body));
  e.w.append(lines);
  for (size_t k = 0; k < e.num_outputs(); ++k) {
    ONNXKIT_ASSIGN(std::string v, e.w.as_tensor(body->outputs()[k]));
    e.line("    " + fmt::format("{}.append({})", lists[k], v));
  }
  return {};
}

Status emit_optional_get_element(Emit& e) {
  if (e.kind(0) == Kind::sequence) {
    e.assign(0, e.value(0)->expr, Kind::sequence);
    return {};
  }
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, x);
  return {};
}

// Optional(x) is x itself; an Optional with no input is None.
Status emit_optional(Emit& e) {
  if (!e.has(0)) {
    e.assign(0, "None", Kind::none);
    return {};
  }
  return emit_optional_get_element(e);
}

Status emit_optional_has_element(Emit& e) {
  if (!e.has(0) || e.kind(0) == Kind::none) {
    e.assign(0, "torch.tensor(False)");
    return {};
  }
  const PyValue* py = e.value(0);
  std::string x = py != nullptr ? py->expr : "None";
  if (py == nullptr) {
    ONNXKIT_ASSIGN(x, e.tensor(0));
  }
  e.assign(0, fmt::format("torch.tensor({} is not None)", x));
  return {};
}

}  // namespace

void add_control_emitters(EmitterTable& t) {
  t.insert({
      {"If", emit_if},
      {"Loop", emit_loop},
      {"Scan", emit_scan},
      {"SequenceEmpty", emit_sequence_empty},
      {"SequenceConstruct", emit_sequence_construct},
      {"SequenceAt", emit_sequence_at},
      {"SequenceInsert", emit_sequence_insert},
      {"SequenceErase", emit_sequence_erase},
      {"SequenceLength", emit_sequence_length},
      {"SplitToSequence", emit_split_to_sequence},
      {"ConcatFromSequence", emit_concat_from_sequence},
      {"SequenceMap", emit_sequence_map},
      {"Optional", emit_optional},
      {"OptionalHasElement", emit_optional_has_element},
      {"OptionalGetElement", emit_optional_get_element},
  });
}

}  // namespace onnxkit::tools::pytorch
