#include "tools/runnable_inputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "runtime/tensor_proto.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

using runtime::DataType;

// Sizes for symbolic dims other than the batch, smallest (fastest) first:
// the windows of a classifier fit from about 32, its position embeddings may
// want exactly 224, audio frames 256 or 512.
constexpr int64_t kDimSizes[] = {2, 16, 32, 64, 128, 224, 256, 320, 512, 1024};
// Batch sizes: 2 first (1 hides batch bugs), then 1 for exports that bake it in.
constexpr int64_t kBatchSizes[] = {2, 1};

bool is_comparison(const ir::Node& node) {
  static const std::set<std::string_view> ops{"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  return node.in_onnx_domain() && ops.count(node.op_type()) > 0;
}

// Ops whose output 0 carries the value of input 0 (cast or reshaped).
bool carries_value(const ir::Node& node) {
  static const std::set<std::string_view> ops{"Cast", "Squeeze", "Unsqueeze", "Reshape", "Identity", "Flatten"};
  return node.in_onnx_domain() && ops.count(node.op_type()) > 0;
}

// The integer a one-element constant holds, when it holds one.
std::optional<int64_t> constant_integer(const ir::Value* value) {
  const onnx::TensorProto* proto = value != nullptr ? value->constant_tensor() : nullptr;
  if (proto == nullptr) return std::nullopt;
  auto tensor = runtime::tensor_from_proto(*proto);
  if (!tensor.ok() || tensor->numel() != 1) return std::nullopt;
  std::optional<int64_t> result;
  (void)runtime::dispatch_numeric(tensor->dtype(), [&]<class T>() -> Status {
    const double v = static_cast<double>(tensor->data<T>()[0]);
    if (v == static_cast<double>(static_cast<int64_t>(v))) result = static_cast<int64_t>(v);
    return {};
  });
  return result;
}

bool holds_one_element(const ir::Value& value) {
  auto dims = value.static_shape();
  if (!dims) return false;
  for (int64_t d : *dims)
    if (d != 1) return false;
  return true;
}

// A planned input: its declared dims, with symbols resolved per attempt.
struct PlannedInput {
  std::string name;
  std::vector<int64_t> fixed;        // declared size, or -1 where symbolic
  std::vector<std::string> symbols;  // the symbol where fixed is -1 ("" when unnamed)
};

struct Attempt {
  int64_t batch = 2;
  int64_t size = 2;
  std::vector<std::pair<std::string, int64_t>> scalars;  // empty: random values
};

// A tensor like `like` holding `value` everywhere.
runtime::Datum filled_like(const runtime::Tensor& like, int64_t value) {
  runtime::Tensor t(like.dtype(), like.shape());
  (void)runtime::dispatch_numeric(t.dtype(), [&]<class T>() -> Status {
    std::fill(t.mutable_data<T>(), t.mutable_data<T>() + t.numel(), static_cast<T>(value));
    return {};
  });
  return runtime::Datum(std::move(t));
}

class Search {
 public:
  Search(const runtime::Session& session, const RunnableInputOptions& options) : session_(session), options_(options) {}

  Result<RunnableInputs> run() {
    ONNXKIT_TRY(plan());
    std::vector<std::vector<std::pair<std::string, int64_t>>> assignments = scalar_assignments();
    const std::vector<int64_t> batches =
        batch_symbols_.empty() ? std::vector<int64_t>{2} : std::vector<int64_t>(std::begin(kBatchSizes), std::end(kBatchSizes));
    const std::vector<int64_t> sizes =
        size_symbols_.empty() ? std::vector<int64_t>{2} : std::vector<int64_t>(std::begin(kDimSizes), std::end(kDimSizes));
    std::string last_error;
    int attempts = 0;
    for (size_t a = 0; a < assignments.size(); ++a) {
      for (int64_t batch : batches) {
        for (int64_t size : sizes) {
          if (attempts == options_.max_attempts) return not_found(last_error, attempts);
          ++attempts;
          Attempt attempt{batch, size, assignments[a]};
          auto feeds = make_feeds(attempt, options_.inputs.seed);
          if (!feeds.ok()) return feeds.error();  // not a matter of sizes: a file, a sequence input
          auto outputs = session_.run(*feeds, options_.limits);
          if (!outputs.ok()) {
            last_error = outputs.error().message();
            continue;
          }
          RunnableInputs found;
          found.feeds.push_back(std::move(feeds).value());
          found.outputs.push_back(std::move(outputs).value());
          ONNXKIT_TRY(add_sets(found, attempt));
          std::vector<std::string> extra = add_other_scalars(found, attempt, assignments, a);
          found.chosen = describe(attempt, extra);
          return found;
        }
      }
    }
    return not_found(last_error, attempts);
  }

 private:
  // Reads the user's files once: their shapes give the symbols they hold.
  Status plan() {
    InputOptions files_only;
    files_only.files = options_.inputs.files;
    files_only.dims = options_.inputs.dims;
    ONNXKIT_ASSIGN(given_, prepare_inputs(session_, files_only));
    for (const auto& [symbol, value] : options_.inputs.dims) bound_.emplace(symbol, value);
    auto is_given = [&](const std::string& name) {
      return std::any_of(given_.begin(), given_.end(), [&](const auto& f) { return f.first == name; }) ||
             std::any_of(options_.inputs.shapes.begin(), options_.inputs.shapes.end(),
                         [&](const auto& s) { return s.first == name; });
    };
    for (const runtime::ValueInfo& in : session_.inputs()) {
      if (!in.type.has_tensor_type() || !in.type.tensor_type().has_shape()) continue;
      const auto& dims = in.type.tensor_type().shape().dim();
      for (const auto& [name, value] : given_) {
        if (name != in.name || !value.is_tensor() || value.tensor().shape().size() != static_cast<size_t>(dims.size())) continue;
        for (int i = 0; i < dims.size(); ++i)
          if (dims[i].has_dim_param()) bound_.emplace(dims[i].dim_param(), value.tensor().shape()[static_cast<size_t>(i)]);
      }
      if (in.has_default || is_given(in.name)) continue;
      PlannedInput planned{in.name, {}, {}};
      bool symbolic = false;
      for (int i = 0; i < dims.size(); ++i) {
        planned.fixed.push_back(dims[i].has_dim_value() ? dims[i].dim_value() : -1);
        planned.symbols.push_back(dims[i].has_dim_param() ? dims[i].dim_param() : "");
        symbolic = symbolic || !dims[i].has_dim_value();
      }
      if (symbolic) planned_.push_back(std::move(planned));
    }
    for (const PlannedInput& in : planned_) {
      for (size_t i = 0; i < in.fixed.size(); ++i) {
        if (in.fixed[i] >= 0 || bound_.count(in.symbols[i]) > 0) continue;
        std::string label = in.symbols[i].empty() ? fmt::format("dim {} of '{}'", i, in.name) : in.symbols[i];
        auto& group = i == 0 ? batch_symbols_ : size_symbols_;
        if (std::find(group.begin(), group.end(), label) == group.end()) group.push_back(label);
      }
    }
    for (auto& [name, values] : compared_constants(session_.model().graph()))
      if (std::none_of(given_.begin(), given_.end(), [&name = name](const auto& f) { return f.first == name; }))
        scalars_.emplace_back(name, std::move(values));
    return {};
  }

  // The compared values first (each scalar at its first, then each other
  // value in turn), random values last.
  std::vector<std::vector<std::pair<std::string, int64_t>>> scalar_assignments() const {
    std::vector<std::vector<std::pair<std::string, int64_t>>> result;
    if (!scalars_.empty()) {
      std::vector<std::pair<std::string, int64_t>> first;
      for (const auto& [name, values] : scalars_) first.emplace_back(name, values.front());
      result.push_back(first);
      for (size_t s = 0; s < scalars_.size(); ++s) {
        for (size_t v = 1; v < scalars_[s].second.size(); ++v) {
          auto other = first;
          other[s].second = scalars_[s].second[v];
          result.push_back(std::move(other));
        }
      }
    }
    result.emplace_back();  // random
    return result;
  }

  Result<runtime::NamedValues> make_feeds(const Attempt& attempt, uint64_t seed) const {
    InputOptions inputs = options_.inputs;
    inputs.random = true;
    inputs.seed = seed;
    for (const PlannedInput& in : planned_) {
      std::vector<int64_t> dims;
      for (size_t i = 0; i < in.fixed.size(); ++i) {
        auto bound = bound_.find(in.symbols[i]);
        if (in.fixed[i] >= 0) dims.push_back(in.fixed[i]);
        else if (!in.symbols[i].empty() && bound != bound_.end()) dims.push_back(bound->second);
        else dims.push_back(i == 0 ? attempt.batch : attempt.size);
      }
      inputs.shapes.emplace_back(in.name, std::move(dims));
    }
    ONNXKIT_ASSIGN(runtime::NamedValues feeds, prepare_inputs(session_, inputs));
    for (const auto& [name, value] : attempt.scalars)
      for (auto& [fed, data] : feeds)
        if (fed == name && data.is_tensor()) data = filled_like(data.tensor(), value);
    return feeds;
  }

  // The sets beyond the first that options.sets asks for: other seeds, same sizes and scalars.
  Status add_sets(RunnableInputs& found, const Attempt& attempt) const {
    for (int set = 1; set < options_.sets; ++set) {
      ONNXKIT_ASSIGN(auto feeds, make_feeds(attempt, options_.inputs.seed + static_cast<uint64_t>(set)));
      auto outputs = session_.run(feeds, options_.limits);
      if (!outputs.ok()) return outputs.error().in(fmt::format("input set {} (seed {})", set + 1, options_.inputs.seed + set));
      found.feeds.push_back(std::move(feeds));
      found.outputs.push_back(std::move(outputs).value());
    }
    return {};
  }

  // One more set for each later scalar assignment the model runs on at the
  // same sizes: the branches those values take get checked too.
  std::vector<std::string> add_other_scalars(RunnableInputs& found, const Attempt& chosen,
                                             const std::vector<std::vector<std::pair<std::string, int64_t>>>& assignments,
                                             size_t index) const {
    std::vector<std::string> added;
    for (size_t a = index + 1; a < assignments.size() && static_cast<int>(added.size()) < options_.max_extra_sets; ++a) {
      Attempt attempt{chosen.batch, chosen.size, assignments[a]};
      auto feeds = make_feeds(attempt, options_.inputs.seed);
      if (!feeds.ok()) continue;
      auto outputs = session_.run(*feeds, options_.limits);
      if (!outputs.ok()) continue;
      found.feeds.push_back(std::move(feeds).value());
      found.outputs.push_back(std::move(outputs).value());
      added.push_back(describe_scalars(attempt.scalars));
    }
    return added;
  }

  static std::string describe_scalars(const std::vector<std::pair<std::string, int64_t>>& scalars) {
    std::vector<std::string> parts;
    for (const auto& [name, value] : scalars) parts.push_back(fmt::format("{} = {}", name, value));
    if (scalars.empty()) return "random integer scalars";
    return join(parts, ", ");
  }

  // "height, width = 64, batch = 2, sample_rate = 16000; one more set with
  // sample_rate random", or "" when everything took the defaults (symbolic
  // dims as 2, random data).
  std::string describe(const Attempt& attempt, const std::vector<std::string>& extra) const {
    std::vector<std::string> parts;
    if (!size_symbols_.empty() && attempt.size != 2)
      parts.push_back(fmt::format("{} = {}", join(size_symbols_, ", "), attempt.size));
    if (!batch_symbols_.empty() && (attempt.batch != 2 || !parts.empty()))
      parts.push_back(fmt::format("{} = {}", join(batch_symbols_, ", "), attempt.batch));
    if (!attempt.scalars.empty()) parts.push_back(describe_scalars(attempt.scalars));
    if (parts.empty()) return "";
    std::string text = join(parts, ", ");
    for (const std::string& other : extra) text += fmt::format("; one more set with {}", other);
    return text;
  }

  Error not_found(const std::string& last_error, int attempts) const {
    if (attempts <= 1) return make_error("{}", last_error);
    std::vector<std::string> tried;
    if (!size_symbols_.empty()) tried.push_back(fmt::format("{} as {}", join(size_symbols_, ", "), fmt::join(kDimSizes, ", ")));
    if (!batch_symbols_.empty())
      tried.push_back(fmt::format("{} as {}", join(batch_symbols_, ", "), fmt::join(kBatchSizes, ", ")));
    for (const auto& [name, values] : scalars_) tried.push_back(fmt::format("{} as {} or random", name, fmt::join(values, ", ")));
    return make_error("none of {} input sets tried runs ({}); the last failed: {}", attempts, join(tried, "; "), last_error);
  }

  const runtime::Session& session_;
  const RunnableInputOptions& options_;
  runtime::NamedValues given_;                                         // from the user's files
  std::map<std::string, int64_t> bound_;                               // symbols the files fix
  std::vector<PlannedInput> planned_;                                  // inputs with symbolic dims to size
  std::vector<std::string> batch_symbols_;                             // at axis 0, unbound
  std::vector<std::string> size_symbols_;                              // elsewhere, unbound
  std::vector<std::pair<std::string, std::vector<int64_t>>> scalars_;  // compared integer scalars
};

}  // namespace

std::vector<std::pair<std::string, std::vector<int64_t>>> compared_constants(const ir::Graph& graph) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> result;
  for (const ir::Value* input : graph.inputs()) {
    if (input->is_constant() || !runtime::is_integer(static_cast<DataType>(input->elem_type())) || !holds_one_element(*input))
      continue;
    std::vector<int64_t> values;
    std::vector<const ir::Value*> todo{input};
    std::set<const ir::Value*> seen{input};
    while (!todo.empty()) {
      const ir::Value* value = todo.back();
      todo.pop_back();
      for (const ir::Use& use : value->uses()) {
        const ir::Node& node = *use.node;
        if (is_comparison(node) && node.inputs().size() == 2) {
          std::optional<int64_t> c = constant_integer(node.input(1 - use.index));
          if (c && std::find(values.begin(), values.end(), *c) == values.end()) values.push_back(*c);
        } else if (carries_value(node) && use.index == 0 && node.output(0) != nullptr && seen.insert(node.output(0)).second) {
          todo.push_back(node.output(0));
        }
      }
    }
    if (!values.empty()) result.emplace_back(input->name(), std::move(values));
  }
  return result;
}

Result<RunnableInputs> find_runnable_inputs(const runtime::Session& session, const RunnableInputOptions& options) {
  return Search(session, options).run();
}

}  // namespace onnxkit::tools
