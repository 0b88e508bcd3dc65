#include "tools/pytorch/writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "io/tensor_proto.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::tools::pytorch {

namespace {

// Names a local or an attribute must not take: Python's keywords, the
// builtins and modules the generated code calls, and nn.Module's own members.
const std::set<std::string>& reserved_names() {
  static const std::set<std::string> names = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
      "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
      "raise", "return", "try", "while", "with", "yield", "self", "torch", "nn", "F", "math", "os", "json", "list", "int",
      "float", "len", "range", "tuple", "bool", "max", "min", "sum", "abs", "round", "any", "all", "zip", "print", "type",
      "isinstance", "enumerate", "reversed", "sorted", "map", "dict", "str", "slice", "iter", "next", "object", "super", "set",
      "divmod", "pow", "hash", "id", "open",
      // nn.Module
      "training", "forward", "eval", "train", "to", "cuda", "cpu", "double", "half", "bfloat16", "apply", "state_dict",
      "load_state_dict", "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules", "children",
      "named_children", "register_buffer", "register_parameter", "add_module", "zero_grad", "requires_grad_", "share_memory",
      "extra_repr", "get_submodule", "get_parameter", "get_buffer", "register_module", "dump_patches", "call_super_init"};
  return names;
}

// ONNX names as Python identifiers: "/layer1/layer1.0/conv1/Conv_output_0"
// -> "layer1_0_conv1_conv". Path segments that the next one repeats (torch's
// "/layer1/layer1.0/") are dropped; `drop_last` (an op type) goes when it is
// the last segment, which makes node names module names.
std::string python_identifier(std::string_view raw, std::string_view drop_last = {}) {
  std::string text(raw);
  for (std::string_view suffix : {"_output_0"})
    if (text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0)
      text.resize(text.size() - suffix.size());
  std::vector<std::string> segments;
  size_t start = 0;
  while (start <= text.size()) {
    size_t slash = text.find('/', start);
    if (slash == std::string::npos) slash = text.size();
    if (slash > start) segments.push_back(text.substr(start, slash - start));
    start = slash + 1;
  }
  if (!drop_last.empty() && segments.size() > 1 && segments.back() == drop_last) segments.pop_back();
  std::vector<std::string> kept;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i + 1 < segments.size() && segments[i + 1].rfind(segments[i] + ".", 0) == 0) continue;
    kept.push_back(segments[i]);
  }
  std::string out;
  for (const std::string& s : kept) {
    if (!out.empty()) out += '_';
    out += s;
  }
  std::string clean;
  for (char c : out) {
    char d = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '_';
    if (d == '_' && (clean.empty() || clean.back() == '_')) continue;
    clean += d;
  }
  while (!clean.empty() && clean.back() == '_') clean.pop_back();
  if (clean.empty()) clean = "v";
  if (std::isdigit(static_cast<unsigned char>(clean[0]))) clean = "v_" + clean;
  return clean;
}

}  // namespace

Writer::Writer(const ir::Model& model) : model_(model), opset_(model.opset("")) {}

std::string Writer::unique(std::string base, std::set<std::string>& used) {
  if (reserved_names().count(base) != 0) base += "_";
  std::string name = base;
  for (int k = 1; used.count(name) != 0; ++k) name = fmt::format("{}_{}", base, k);
  used.insert(name);
  return name;
}

std::string Writer::new_local(std::string_view raw) { return unique(python_identifier(raw), locals_); }
std::string Writer::new_attribute(std::string_view raw) { return unique(python_identifier(raw), attributes_); }

std::string Writer::module_name(const ir::Node& node) {
  if (node.name().empty()) return new_attribute(node.op_type());
  return unique(python_identifier(node.name(), node.op_type()), attributes_);
}

std::string Writer::comment(const ir::Node& node) const {
  if (!node.name().empty()) return "# " + node.name();
  return "# " + node.op_type() + " (unnamed)";
}

void Writer::bind(const ir::Value* value, PyValue py) {
  if (value != nullptr) values_[value] = std::move(py);
}

const PyValue* Writer::find(const ir::Value* value) const {
  auto it = values_.find(value);
  return it == values_.end() ? nullptr : &it->second;
}

const runtime::Tensor* Writer::constant(const ir::Value* value) {
  if (value == nullptr) return nullptr;
  auto it = constants_.find(value);
  if (it != constants_.end()) return &it->second;
  const onnx::TensorProto* proto = value->constant_tensor();
  // Initializers that old exporters also list as graph inputs are weights
  // all the same: the module holds them (bind_graph_inputs leaves them out).
  if (proto == nullptr && value->initializer() != nullptr && value->owner() == &model_.graph()) proto = value->initializer();
  if (proto == nullptr) return nullptr;
  auto tensor = runtime::tensor_from_proto(*proto, model_.external_data());
  if (!tensor.ok()) return nullptr;
  return &(constants_[value] = std::move(tensor).value());
}

const runtime::Tensor* Writer::constant_of_attribute(const onnx::TensorProto& proto) {
  auto it = attribute_constants_.find(&proto);
  if (it != attribute_constants_.end()) return &it->second;
  auto tensor = runtime::tensor_from_proto(proto, model_.external_data());
  if (!tensor.ok()) return nullptr;
  return &(attribute_constants_[&proto] = std::move(tensor).value());
}

int32_t Writer::dtype(const ir::Value* value) const {
  if (value == nullptr) return 0;
  if (int32_t t = value->elem_type(); t != 0) return t;
  if (const PyValue* py = find(value)) return py->dtype;
  if (value->initializer() != nullptr) return value->initializer()->data_type();
  if (const onnx::TensorProto* t = value->constant_tensor()) return t->data_type();
  if (auto it = constants_.find(value); it != constants_.end()) return static_cast<int32_t>(it->second.dtype());
  return 0;
}

std::optional<std::vector<int64_t>> Writer::dims(const ir::Value* value) const {
  if (value == nullptr) return std::nullopt;
  if (const onnx::TensorProto* t = value->constant_tensor() ? value->constant_tensor() : value->initializer())
    return std::vector<int64_t>(t->dims().begin(), t->dims().end());
  if (auto it = constants_.find(value); it != constants_.end()) return it->second.shape();
  return value->static_shape();
}

std::string Writer::stored(const runtime::Tensor& data, std::string_view hint, bool parameter) {
  std::string name = new_attribute(hint);
  std::string dtype = torch_dtype(static_cast<int32_t>(data.dtype()));
  if (!parameter && data.numel() <= 16) {
    // Small constants read best as their values; not in the state_dict.
    std::vector<std::string> items = py_elements(data);
    std::string values = data.rank() == 0 ? items.at(0) : py_list(items);
    std::string literal = fmt::format("torch.tensor({}, dtype={})", values, dtype);
    if (data.rank() > 1) literal += fmt::format(".reshape{}", py_tuple(data.shape()));
    init_lines_.push_back(fmt::format("self.register_buffer({}, {}, persistent=False)", py_str(name), literal));
  } else {
    std::string empty = fmt::format("torch.empty({}, dtype={})", py_tuple(data.shape()), dtype);
    if (data.rank() == 0) empty = fmt::format("torch.empty((), dtype={})", dtype);
    if (parameter) init_lines_.push_back(fmt::format("self.{} = nn.Parameter({})", name, empty));
    else init_lines_.push_back(fmt::format("self.register_buffer({}, {})", py_str(name), empty));
    stored_tensors_.push_back({name, data});
  }
  return "self." + name;
}

std::string Writer::stored(const ir::Value* value) {
  auto it = stored_.find(value);
  if (it != stored_.end()) return it->second;
  const runtime::Tensor* data = constant(value);
  // Trained weights (float initializers) are parameters, so that fine-tuning
  // reaches them; everything else (masks, indices, Constant nodes) a buffer.
  bool parameter = value->initializer() != nullptr && is_float_type(static_cast<int32_t>(data->dtype())) && data->numel() > 1;
  return stored_[value] = stored(*data, value->name(), parameter);
}

Result<std::string> Writer::as_tensor(const ir::Value* value) {
  if (value == nullptr) return make_error("an omitted input is needed as a tensor");
  if (const PyValue* py = find(value)) {
    std::string dtype = torch_dtype(py->dtype != 0 ? py->dtype : static_cast<int32_t>(onnx::TensorProto::INT64));
    switch (py->kind) {
      case Kind::tensor: return py->expr;
      case Kind::ints:
      case Kind::integer: return fmt::format("torch.tensor({}, dtype={})", py->expr, dtype);
      case Kind::sequence: return make_error("'{}' is a sequence, not a tensor", value->name());
      case Kind::none: return make_error("'{}' is omitted", value->name());
    }
  }
  if (constant(value) != nullptr) {
    if (torch_dtype(static_cast<int32_t>(constant(value)->dtype())).empty())
      return make_error("constant '{}' is {}, which torch has no type for", value->name(),
                        runtime::to_string(constant(value)->dtype()));
    return stored(value);
  }
  return make_error("'{}' has no value yet (is the graph out of order?)", value->name());
}

std::string Writer::add_module(const ir::Node& node, const std::string& constructor, std::vector<ModuleWeight> weights) {
  std::string name = module_name(node);
  init_lines_.push_back(fmt::format("self.{} = {}", name, constructor));
  for (ModuleWeight& w : weights) stored_tensors_.push_back({name + "." + w.name, std::move(w.data)});
  ++modules_;
  return "self." + name;
}

void Writer::use_helper(std::string_view name) {
  if (helpers_.count(std::string(name)) != 0) return;
  auto it = python_helpers().find(name);
  if (it == python_helpers().end()) return;
  for (std::string_view dep : it->second.needs) use_helper(dep);
  helpers_.insert(std::string(name));
  helper_order_.emplace_back(name);
}

Status Writer::emit_node(const ir::Node& node) {
  if (absorbed_.count(&node) != 0) return {};
  auto fail = [&](std::string_view why) {
    return make_error("cannot convert {} node '{}': {}", node.op_type(), node.name().empty() ? "(unnamed)" : node.name(), why);
  };
  if (!node.in_onnx_domain())
    return fail(
        fmt::format("operators of domain '{}' have no PyTorch form (only the default ONNX domain converts)", node.domain()));
  auto it = emitter_table().find(node.op_type());
  if (it == emitter_table().end()) {
    auto reason = unconvertible_ops().find(node.op_type());
    if (reason != unconvertible_ops().end()) return fail(reason->second);
    return fail("no PyTorch emitter for this operator");
  }
  Emit emit(*this, node, opset_);
  Status status = it->second(emit);
  if (!status.ok()) {
    // Emitters' own failures come from e.fail() and name the node already.
    if (status.error().message().rfind("cannot convert ", 0) == 0) return status;
    return fail(status.error().message());
  }
  for (const ir::Value* out : node.outputs())
    if (out != nullptr && find(out) == nullptr && constant(out) == nullptr)
      return fail(fmt::format("output '{}' was not written", out->name()));
  return {};
}

Status Writer::emit_nodes(const ir::Graph& graph) {
  ONNXKIT_ASSIGN(std::vector<ir::Node*> order, graph.topological_order());
  for (const ir::Node* node : order) ONNXKIT_TRY(emit_node(*node));
  return {};
}

Result<std::vector<std::string>> Writer::emit_block(const ir::Graph& graph) {
  std::vector<std::string> saved;
  saved.swap(lines_);
  ++indent_;
  Status status = emit_nodes(graph);
  --indent_;
  saved.swap(lines_);
  if (!status.ok()) return status.error();
  return saved;
}

Result<std::vector<Writer::Inputs>> Writer::bind_graph_inputs() {
  std::vector<Inputs> inputs;
  for (const ir::Value* v : model_.graph().inputs()) {
    if (v->initializer() != nullptr) {
      ++frozen_inputs_;
      continue;
    }
    // Optionals are a tensor (or list) or None; sequences Python lists.
    const onnx::TypeProto* type = v->has_type() ? &v->type() : nullptr;
    if (type != nullptr && type->has_optional_type()) type = &type->optional_type().elem_type();
    Inputs in;
    in.sequence = type != nullptr && type->has_sequence_type();
    if (in.sequence) type = &type->sequence_type().elem_type();
    if (type == nullptr || !type->has_tensor_type())
      return make_error("graph input '{}' is not a tensor, a sequence or an optional of them", v->name());
    in.name = v->name();
    in.local = new_local(v->name());
    in.dtype = type->tensor_type().elem_type();
    if (torch_dtype(in.dtype).empty())
      return make_error("graph input '{}' is {}, which torch has no type for", v->name(), io::data_type_name(in.dtype));
    if (type->tensor_type().has_shape())
      for (const auto& d : type->tensor_type().shape().dim())
        in.dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
    bind(v, {in.sequence ? Kind::sequence : Kind::tensor, in.local, in.dtype});
    inputs.push_back(std::move(in));
  }
  return inputs;
}

Result<std::string> Writer::return_statement() {
  std::vector<std::string> outs;
  for (const ir::Value* v : model_.graph().outputs()) {
    const PyValue* py = find(v);
    if (py != nullptr && (py->kind == Kind::sequence || py->kind == Kind::none)) {
      outs.push_back(py->expr);
      continue;
    }
    auto t = as_tensor(v);
    if (!t.ok()) return t.error().in(fmt::format("graph output '{}'", v->name()));
    outs.push_back(*t);
  }
  if (outs.size() == 1) return "return " + outs[0];
  return "return " + fmt::format("{}", fmt::join(outs, ", "));
}

// --- Emit -------------------------------------------------------------------

int32_t Emit::dtype(size_t i) const { return w.dtype(node.input(i)); }

std::optional<std::vector<int64_t>> Emit::dims(size_t i) const { return w.dims(node.input(i)); }

std::optional<int64_t> Emit::rank(size_t i) const {
  if (auto d = dims(i)) return static_cast<int64_t>(d->size());
  return std::nullopt;
}

Kind Emit::kind(size_t i) const {
  if (!has(i)) return Kind::none;
  if (const PyValue* py = w.find(input(i))) return py->kind;
  return Kind::tensor;
}

const PyValue* Emit::value(size_t i) const { return w.find(input(i)); }

const runtime::Tensor* Emit::constant(size_t i) { return w.constant(input(i)); }

std::optional<std::vector<int64_t>> Emit::constant_ints(size_t i) {
  const runtime::Tensor* t = constant(i);
  if (t == nullptr || !runtime::is_integer(t->dtype())) return std::nullopt;
  std::vector<int64_t> values;
  Status st = runtime::dispatch_integer(t->dtype(), [&]<class T>() -> Status {
    for (const T& v : t->values<T>()) values.push_back(static_cast<int64_t>(v));
    return {};
  });
  if (!st.ok()) return std::nullopt;
  return values;
}

std::optional<double> Emit::constant_number(size_t i) {
  const runtime::Tensor* t = constant(i);
  if (t == nullptr || t->numel() != 1) return std::nullopt;
  std::optional<double> v;
  if (t->dtype() == runtime::DataType::boolean) return t->data<bool>()[0] ? 1.0 : 0.0;
  Status st = runtime::dispatch_numeric(t->dtype(), [&]<class T>() -> Status {
    v = static_cast<double>(t->data<T>()[0]);
    return {};
  });
  return v;
}

Result<std::string> Emit::tensor(size_t i) { return w.as_tensor(input(i)); }

Result<std::string> Emit::ints(size_t i) {
  if (auto c = constant_ints(i)) return py_list(*c);
  if (const PyValue* py = value(i)) {
    if (py->kind == Kind::ints) return py->expr;
    if (py->kind == Kind::integer) return "[" + py->expr + "]";
    if (py->kind == Kind::tensor) return py->expr + ".tolist()";
  }
  if (!has(i)) return make_error("input {} is omitted", i);
  return make_error("input '{}' is not a list of integers", input(i)->name());
}

Result<std::string> Emit::integer(size_t i) {
  if (auto c = constant_ints(i); c && c->size() == 1) return py_int((*c)[0]);
  if (const PyValue* py = value(i)) {
    if (py->kind == Kind::integer) return py->expr;
    if (py->kind == Kind::ints) return py->expr + "[0]";
    if (py->kind == Kind::tensor) return "int(" + py->expr + ")";
  }
  if (!has(i)) return make_error("input {} is omitted", i);
  return make_error("input '{}' is not an integer", input(i)->name());
}

Result<std::string> Emit::number(size_t i) {
  if (auto v = constant_number(i)) {
    const runtime::Tensor* t = constant(i);
    if (t->dtype() == runtime::DataType::boolean) return py_bool(*v != 0);
    return is_float_type(static_cast<int32_t>(t->dtype())) ? py_float(*v) : py_int(static_cast<int64_t>(*v));
  }
  if (const PyValue* py = value(i)) {
    if (py->kind == Kind::integer) return py->expr;
    if (py->kind == Kind::ints) return py->expr + "[0]";
    if (py->kind == Kind::tensor) return py->expr + ".item()";
  }
  if (!has(i)) return make_error("input {} is omitted", i);
  return make_error("input '{}' is not a number", input(i)->name());
}

Result<std::string> Emit::operand(size_t i, std::optional<size_t> other) {
  const runtime::Tensor* t = constant(i);
  // A number literal only beside a real tensor: two literals would make a
  // Python number, not a tensor.
  if (t != nullptr && t->numel() == 1 && other && kind(*other) == Kind::tensor && constant(*other) == nullptr) {
    auto own = static_cast<int64_t>(t->rank());
    std::optional<int64_t> other_rank = rank(*other);
    if (own == 0 || (other_rank && *other_rank >= own)) return number(i);
  }
  return tensor(i);
}

std::vector<float> Emit::attr_floats(std::string_view name) const {
  const ir::Attribute* a = node.attribute(name);
  if (a == nullptr) return {};
  return {a->proto.floats().begin(), a->proto.floats().end()};
}

int32_t Emit::out_dtype(size_t k) const { return w.dtype(node.output(k)); }

std::optional<std::vector<int64_t>> Emit::out_dims(size_t k) const { return w.dims(node.output(k)); }

std::string Emit::output_name(size_t k) {
  const ir::Value* out = node.output(k);
  if (out == nullptr) return "_";
  if (const PyValue* py = w.find(out)) return py->expr;
  std::string name = w.new_local(out->name());
  w.bind(out, {Kind::tensor, name, w.dtype(out)});
  return name;
}

void Emit::assign(size_t k, const std::string& expr, Kind kind) {
  std::string name = output_name(k);
  w.line(fmt::format("{} = {}  {}", name, expr, w.comment(node)));
  PyValue py{kind, name, out_dtype(k)};
  w.bind(node.output(k), py);
}

void Emit::assign_ints(size_t k, const std::vector<std::string>& elements, bool sizes) {
  std::string name = output_name(k);
  w.line(fmt::format("{} = {}  {}", name, py_list(elements), w.comment(node)));
  PyValue py{Kind::ints, name, out_dtype(k)};
  // Later statements name a compound element by where it now is.
  py.elements = elements;
  for (size_t i = 0; i < elements.size(); ++i)
    if (parenthesized(elements[i]) != elements[i]) (*py.elements)[i] = fmt::format("{}[{}]", name, i);
  py.sizes = sizes;
  w.bind(node.output(k), py);
}

void Emit::assign_many(const std::vector<size_t>& ks, const std::string& expr) {
  std::vector<std::string> names;
  for (size_t k : ks) names.push_back(output_name(k));
  std::string targets = fmt::format("{}", fmt::join(names, ", "));
  if (names.size() == 1) targets += ",";
  w.line(fmt::format("{} = {}  {}", targets, expr, w.comment(node)));
}

void Emit::alias(const ir::Value* out, const PyValue& value) { w.bind(out, value); }

void Emit::line(const std::string& text) { w.line(text); }

std::string Emit::local(std::string_view hint) { return w.new_local(hint); }

std::string Emit::module(const std::string& constructor, std::vector<ModuleWeight> weights) {
  return w.add_module(node, constructor, std::move(weights));
}

std::string Emit::helper(std::string_view name) {
  w.use_helper(name);
  return "_" + std::string(name);  // locals never start with "_": no clash
}

void Emit::absorb(const ir::Node& other) { w.absorb(&other); }

std::vector<const ir::Node*> Emit::consumers(size_t k) const {
  std::vector<const ir::Node*> nodes;
  const ir::Value* out = node.output(k);
  if (out == nullptr) return nodes;
  for (const ir::Use& use : out->uses()) {
    if (use.node->graph() != node.graph()) return {};
    nodes.push_back(use.node);
  }
  return nodes;
}

Error Emit::fail(std::string_view reason) const {
  return make_error("cannot convert {} node '{}': {}", node.op_type(), node.name().empty() ? "(unnamed)" : node.name(), reason);
}

}  // namespace onnxkit::tools::pytorch
