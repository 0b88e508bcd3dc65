// The commands' library functions (src/tools/), called as the CLI calls them:
// paths in and out, options in the same structs, the command-line parsers
// for the texts a user writes (shapes, edit operations). The package's
// Python files (onnxkit/_tools.py) turn ModelProto and bytes into paths and
// back.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "errors.h"
#include "io/model_file.h"
#include "passes/fold.h"
#include "passes/pass.h"
#include "tools/check.h"
#include "tools/compare.h"
#include "tools/edit.h"
#include "tools/edit_file.h"
#include "tools/info.h"
#include "tools/shapes.h"
#include "tools/simplify.h"

namespace onnxkit::python {
namespace py = pybind11;

namespace {

// How a result is saved: "keep" tensors external where the input had them
// (the CLI's default), "none" writes everything inline (to be read back into
// a ModelProto), "all" moves every tensor of 1 KiB or more to OUT.data.
io::SaveOptions save_options(const std::string& external) {
  io::SaveOptions save;
  if (external == "none") save.external = io::ExternalDataPolicy::none;
  else if (external == "all") save.external = io::ExternalDataPolicy::all;
  else if (external != "keep")
    raise(ErrorKind::invalid_argument, fmt::format("external data: '{}' is not keep, none or all", external));
  return save;
}

template <class F> auto without_gil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

std::string info(py::handle model, bool nodes) {
  tools::InfoOptions options;
  options.nodes = nodes;
  nlohmann::json report;
  if (py::isinstance<py::bytes>(model)) {
    std::unique_ptr<ir::Model> loaded = value_or_raise(load_model(model), ErrorKind::error);
    report = value_or_raise(without_gil([&] { return tools::model_info(*loaded, options); }), ErrorKind::error);
  } else {
    std::string path = model.cast<std::string>();
    report = value_or_raise(without_gil([&] { return tools::model_info(path, options); }), ErrorKind::error);
  }
  // As `info --json` prints it: bytes that are not UTF-8 (a doc string) are replaced.
  return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

py::tuple check(py::handle model, bool full) {
  analysis::CheckOptions options;
  options.full = full;
  analysis::CheckReport report;
  if (py::isinstance<py::bytes>(model)) {
    std::span<const std::byte> bytes = bytes_of(model);
    io::LoadedModel loaded =
        value_or_raise(without_gil([&] { return io::parse_model(bytes, ".", "<bytes>"); }), ErrorKind::error);
    report = without_gil([&] { return analysis::check_model(loaded.proto, loaded.external_data->base_dir(), options); });
  } else {
    std::string path = model.cast<std::string>();
    report = value_or_raise(without_gil([&] { return tools::check_model_file(path, options); }), ErrorKind::error);
  }
  py::list problems;
  for (const analysis::CheckProblem& p : report.problems)
    problems.append(py::make_tuple(p.location, p.message, p.node_index, p.node_name, p.op_type));
  return py::make_tuple(problems, report.notes);
}

py::dict infer_shapes(const std::string& in, const std::string& out, const std::string& external) {
  tools::ShapesOptions options;
  options.save = save_options(external);
  tools::ShapesReport report =
      value_or_raise(without_gil([&] { return tools::infer_shapes_file(in, out, options); }), ErrorKind::error);
  py::dict d;
  d["values"] = report.values;
  d["with_shape"] = report.with_shape;
  d["fully_static"] = report.fully_static;
  d["warning"] = report.warning;
  return d;
}

// Each item is a line of an edit script ("--batch 4", "set-attr conv1:epsilon=1e-5",
// or several lines) or a (name, argument) pair. A single operation keeps the
// flag's name as its origin, so that messages read as the CLI's do.
std::vector<tools::EditOperation> edit_operations_from(const py::list& items) {
  std::vector<tools::EditOperation> operations;
  for (size_t i = 0; i < items.size(); ++i) {
    py::handle item = items[i];
    std::string text;
    if (py::isinstance<py::str>(item)) {
      text = item.cast<std::string>();
    } else if ((py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item)) && py::len(item) >= 1 && py::len(item) <= 2) {
      py::sequence pair = py::reinterpret_borrow<py::sequence>(item);
      text = py::str(pair[0]).cast<std::string>();
      if (pair.size() == 2) {
        std::string argument = py::str(pair[1]).cast<std::string>();
        if (argument.find('\n') != std::string::npos)
          raise(ErrorKind::invalid_argument, fmt::format("operations[{}]: the argument holds a line break", i));
        text += " " + argument;
      }
    } else {
      raise(ErrorKind::invalid_argument,
            fmt::format("operations[{}]: expected a str such as '--batch 4' or a pair such as ('batch', 4), got a {}", i,
                        type_name(item)));
    }
    std::vector<tools::EditOperation> parsed =
        value_or_raise(tools::parse_edit_script(text, fmt::format("operations[{}]", i)), ErrorKind::error);
    if (parsed.size() == 1) parsed[0].origin = "--" + parsed[0].name;
    operations.insert(operations.end(), parsed.begin(), parsed.end());
  }
  return operations;
}

py::dict edit(const std::string& in, const std::string& out, const py::list& items, const std::string& external) {
  std::vector<tools::EditOperation> operations = edit_operations_from(items);
  tools::EditToolOptions options;
  options.save = save_options(external);
  tools::EditToolReport report =
      value_or_raise(without_gil([&] { return tools::edit_file(in, out, operations, options); }), ErrorKind::error);
  py::dict d;
  d["done"] = report.done;
  d["warnings"] = report.warnings;
  d["shapeless_outputs"] = report.shapeless_outputs;
  d["nodes_before"] = report.nodes_before;
  d["nodes_after"] = report.nodes_after;
  return d;
}

struct SimplifyArguments {
  std::vector<std::string> input_shapes;  // as --input-shape takes them: NAME:D0,D1,...
  bool keep_dynamic = false;
  int check = 1;
  std::vector<std::string> inputs;       // as --input: NAME=FILE
  std::vector<std::string> test_shapes;  // as run's --shape: NAME:D0,D1,... for the check's random inputs
  uint64_t seed = 0;
  double rtol = 1e-4, atol = 1e-5;
  bool verify_each_pass = false;
  std::vector<std::string> skip;
  std::vector<std::string> exclude_nodes;
  bool fold = true;
  uint64_t fold_limit = 1 << 20;
  bool remove_unused_inputs = false;
  bool freeze_initializers = false;
  std::string external = "keep";
};

// What cmd_simplify.cpp does with its flags.
tools::SimplifyToolOptions simplify_options(const SimplifyArguments& a) {
  tools::SimplifyToolOptions options;
  options.keep_dynamic = a.keep_dynamic;
  for (const std::string& flag : a.input_shapes)
    options.input_shapes.push_back(value_or_raise(tools::parse_input_shape_flag(flag), ErrorKind::error));
  for (const std::string& flag : a.inputs)
    options.check_inputs.files.push_back(value_or_raise(tools::parse_input_flag(flag), ErrorKind::error));
  for (const std::string& flag : a.test_shapes)
    options.check_inputs.shapes.push_back(value_or_raise(tools::parse_shape_flag(flag), ErrorKind::error));
  options.check_inputs.seed = a.seed;
  if (a.check < 0) raise(ErrorKind::invalid_argument, fmt::format("check_n must not be negative (got {})", a.check));
  options.check_runs = a.check;
  options.rtol = a.rtol;
  options.atol = a.atol;
  options.verify_each_pass = a.verify_each_pass;
  options.simplify.passes.skipped_passes.insert(a.skip.begin(), a.skip.end());
  options.simplify.passes.excluded_nodes.insert(a.exclude_nodes.begin(), a.exclude_nodes.end());
  options.simplify.passes.remove_unused_inputs = a.remove_unused_inputs;
  options.freeze_initializers = a.freeze_initializers;
  if (!a.fold) options.simplify.passes.skipped_passes.emplace(passes::kFoldConstants);
  options.simplify.passes.folding.size_limit = a.fold_limit;
  options.save = save_options(a.external);
  return options;
}

py::dict simplify(const std::string& in, const std::string& out, const SimplifyArguments& arguments) {
  tools::SimplifyToolOptions options = simplify_options(arguments);
  tools::SimplifyToolReport report =
      value_or_raise(without_gil([&] { return tools::simplify_file(in, out, options); }), ErrorKind::error);
  py::dict d;
  d["nodes_before"] = report.before.nodes;
  d["nodes_after"] = report.after.nodes;
  d["ops_before"] = report.before.ops;
  d["ops_after"] = report.after.ops;
  d["warnings"] = report.passes.warnings;
  d["iterations"] = report.passes.iterations;
  d["checks_run"] = report.checks_run;
  d["max_abs_diff"] = report.max_abs_diff;
  d["text"] = tools::render_simplify_text(report, true);
  return d;
}

struct CompareArguments {
  std::vector<std::string> inputs;  // as --input: NAME=FILE
  std::vector<std::string> shapes;  // as --shape: NAME:D0,D1,...
  std::vector<std::string> dims;    // as --dim: SYMBOL=N
  std::vector<std::string> ranges;  // as --val-range: NAME:LO,HI
  uint64_t seed = 0;
  int iterations = 1;
  double rtol = 1e-4, atol = 1e-5;
  std::string stat = "elemwise";
  double quantile = 0.99;
  bool fail_fast = false;
  bool local = true;
  int threads = 0;
};

// What cmd_compare.cpp does with its flags.
tools::CompareOptions compare_options(const CompareArguments& a) {
  tools::CompareOptions options;
  options.inputs = value_or_raise(tools::parse_input_flags({a.inputs, a.shapes, a.dims, a.ranges}), ErrorKind::invalid_argument);
  options.inputs.seed = a.seed;
  if (a.iterations < 1) raise(ErrorKind::invalid_argument, fmt::format("iterations must be at least 1 (got {})", a.iterations));
  options.iterations = a.iterations;
  if (a.rtol < 0 || a.atol < 0)
    raise(ErrorKind::invalid_argument, fmt::format("rtol and atol must not be negative (got {}, {})", a.rtol, a.atol));
  options.tolerance.rtol = a.rtol;
  options.tolerance.atol = a.atol;
  options.tolerance.stat = value_or_raise(tools::parse_error_stat(a.stat), ErrorKind::invalid_argument);
  if (!(a.quantile >= 0 && a.quantile <= 1))
    raise(ErrorKind::invalid_argument, fmt::format("quantile must be within [0, 1] (got {})", a.quantile));
  options.tolerance.quantile = a.quantile;
  options.fail_fast = a.fail_fast;
  options.local_errors = a.local;
  options.threads = a.threads;
  return options;
}

// tools::compare_models on two paths, as `onnxkit compare A B` calls it; a
// model given as bytes is parsed here and compared in memory, named `label`
// in the report.
std::string compare(py::handle a, py::handle b, const std::string& label, const CompareArguments& arguments) {
  tools::CompareOptions options = compare_options(arguments);
  tools::CompareReport report;
  if (!py::isinstance<py::bytes>(a) && !py::isinstance<py::bytes>(b)) {
    std::string path_a = a.cast<std::string>(), path_b = b.cast<std::string>();
    report = value_or_raise(without_gil([&] { return tools::compare_models(path_a, path_b, options); }), ErrorKind::error);
  } else {
    std::shared_ptr<const ir::Model> model_a = value_or_raise(load_model(a), ErrorKind::error);
    std::shared_ptr<const ir::Model> model_b = value_or_raise(load_model(b), ErrorKind::error);
    report = value_or_raise(without_gil([&] { return tools::compare_models(model_a, model_b, options); }), ErrorKind::error);
    report.a = py::isinstance<py::bytes>(a) ? label : a.cast<std::string>();
    report.b = py::isinstance<py::bytes>(b) ? label : b.cast<std::string>();
  }
  // As `compare --json` prints it.
  return tools::compare_report_json(report).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void add_tools(py::module_& module) {
  module.def("info", &info, py::arg("model"), py::arg("nodes") = false,
             "tools::model_info on a path (str) or a model's bytes: the `info --json` object as JSON text");
  module.def("check", &check, py::arg("model"), py::arg("full") = false,
             "tools::check_model_file on a path (str), analysis::check_model on bytes: "
             "([(location, message, node_index, node_name, op_type)], notes)");
  module.def("infer_shapes", &infer_shapes, py::arg("input"), py::arg("output"), py::arg("external") = "keep",
             "tools::infer_shapes_file");
  module.def("edit", &edit, py::arg("input"), py::arg("output"), py::arg("operations"), py::arg("external") = "keep",
             "tools::edit_file, operations given as edit script lines or (name, argument) pairs");
  module.def(
      "simplify",
      [](const std::string& in, const std::string& out, std::vector<std::string> input_shapes, bool keep_dynamic, int check,
         std::vector<std::string> inputs, std::vector<std::string> test_shapes, uint64_t seed, double rtol, double atol,
         bool verify_each_pass, std::vector<std::string> skip, std::vector<std::string> exclude_nodes, bool fold,
         uint64_t fold_limit, bool remove_unused_inputs, bool freeze_initializers, std::string external) {
        return simplify(in, out,
                        {std::move(input_shapes), keep_dynamic, check, std::move(inputs), std::move(test_shapes), seed, rtol,
                         atol, verify_each_pass, std::move(skip), std::move(exclude_nodes), fold, fold_limit,
                         remove_unused_inputs, freeze_initializers, std::move(external)});
      },
      py::arg("input"), py::arg("output"), py::kw_only(), py::arg("input_shapes") = std::vector<std::string>{},
      py::arg("keep_dynamic") = false, py::arg("check") = 1, py::arg("inputs") = std::vector<std::string>{},
      py::arg("test_shapes") = std::vector<std::string>{}, py::arg("seed") = 0, py::arg("rtol") = 1e-4, py::arg("atol") = 1e-5,
      py::arg("verify_each_pass") = false, py::arg("skip") = std::vector<std::string>{},
      py::arg("exclude_nodes") = std::vector<std::string>{}, py::arg("fold") = true, py::arg("fold_limit") = uint64_t{1} << 20,
      py::arg("remove_unused_inputs") = false, py::arg("freeze_initializers") = false, py::arg("external") = "keep",
      "tools::simplify_file, its options as simplify's flags take them");
  module.def(
      "passes",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& pass : passes::all_passes()) out.emplace_back(pass->name(), pass->summary());
        return out;
      },
      "[(name, summary)] of simplify's passes in the order they run, constant folding "
      "('fold-constants') last");
  module.def(
      "edit_operations",
      [] {
        std::vector<std::tuple<std::string, std::string, std::string>> out;
        for (const auto& op : tools::edit_operations())
          out.emplace_back(std::string(op.name), std::string(op.argument), std::string(op.summary));
        return out;
      },
      "[(name, argument syntax, summary)] of edit's operations, as edit --help lists them");
  module.def(
      "compare",
      [](py::object a, py::object b, std::string label, std::vector<std::string> inputs, std::vector<std::string> shapes,
         std::vector<std::string> dims, std::vector<std::string> val_ranges, uint64_t seed, int iterations, double rtol,
         double atol, std::string stat, double quantile, bool fail_fast, bool local, int threads) {
        return compare(a, b, label,
                       {std::move(inputs), std::move(shapes), std::move(dims), std::move(val_ranges), seed, iterations, rtol,
                        atol, std::move(stat), quantile, fail_fast, local, threads});
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("label") = "<model>", py::arg("inputs") = std::vector<std::string>{},
      py::arg("shapes") = std::vector<std::string>{}, py::arg("dims") = std::vector<std::string>{},
      py::arg("val_ranges") = std::vector<std::string>{}, py::arg("seed") = 0, py::arg("iterations") = 1, py::arg("rtol") = 1e-4,
      py::arg("atol") = 1e-5, py::arg("stat") = "elemwise", py::arg("quantile") = 0.99, py::arg("fail_fast") = false,
      py::arg("local") = true, py::arg("threads") = 0,
      "tools::compare_models on paths (str) or models' bytes, its options as compare's flags take them: "
      "the `compare --json` object as JSON text");
}

}  // namespace onnxkit::python
