#include "tools/pytorch_convert.h"

#include <fmt/format.h>

#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <tuple>
#include <vector>

#include "analysis/onnx_inference.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "io/subprocess.h"
#include "runtime/session.h"
#include "tools/compare.h"
#include "tools/inputs.h"
#include "tools/runnable_inputs.h"
#include "util/text.h"

namespace onnxkit::tools {

namespace fs = std::filesystem;

namespace {

// A folder made for this run, removed with everything in it when it goes.
class TempDir {
 public:
  static Result<TempDir> create(const fs::path& parent, const std::string& stem) {
    std::string pattern = (parent / (stem + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      return make_error("{}: cannot create a temporary folder: {}", parent.string(), std::strerror(errno));
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  explicit TempDir(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

std::vector<io::SafetensorsEntry> entries_of(const std::vector<PytorchTensor>& tensors) {
  std::vector<io::SafetensorsEntry> entries;
  for (const PytorchTensor& t : tensors) {
    io::SafetensorsEntry e;
    e.name = t.key;
    e.data_type = static_cast<int32_t>(t.data.dtype());
    e.shape = t.data.shape();
    e.bytes = std::span<const std::byte>(static_cast<const std::byte*>(t.data.raw()), t.data.nbytes());
    entries.push_back(std::move(e));
  }
  return entries;
}

// Runs the generated module (from `dir`) on the inputs and returns its outputs.
constexpr const char* kRunner = R"(import importlib.util
import json
import sys

import torch

spec = importlib.util.spec_from_file_location("onnxkit_generated", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.load(sys.argv[2])
inputs = module.read_safetensors(sys.argv[3])
args = [inputs[f"input_{i}"] for i in range(len(inputs))]
referee = len(sys.argv) > 5 and sys.argv[5] == "--referee"
as_tuple = lambda y: y if isinstance(y, tuple) else (y,)
generator = torch.Generator().manual_seed(0)


def nudge(a):
    """The input a few units in the last place away (as many roundings would
    move it), up or down at random."""
    if a.dtype not in (torch.float32, torch.float64):
        return a
    sign = torch.randint(0, 2, a.shape, generator=generator).to(a.dtype) * 2 - 1
    return a * (1 + sign * 4 * torch.finfo(a.dtype).eps)


with torch.no_grad():
    if not referee:
        outputs = as_tuple(model(*args))
    else:  # how far rounding alone moves the outputs: nudged inputs (output_k), in float64 (wide_k)
        outputs = as_tuple(model(*[nudge(a) for a in args]))
        count = len(outputs)
        try:
            outputs += as_tuple(model.double()(*[a.double() if a.is_floating_point() else a for a in args]))
        except Exception:  # steps fixed to float32 (a Cast, a ConstantOfShape) may not mix: the nudged run referees alone
            pass
NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
         torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
header, chunks, offset = {}, [], 0
for k, y in enumerate(outputs):
    if not torch.is_tensor(y):
        continue
    name = f"output_{k}" if not referee or k < count else f"wide_{k - count}"
    y = y.detach().cpu().contiguous()
    flat = (y.to(torch.uint8) if y.dtype == torch.bool else y).reshape(-1)
    raw = flat.view(torch.uint8) if flat.numel() else flat.to(torch.uint8)
    try:
        data = raw.numpy().tobytes()
    except Exception:  # torch without numpy
        data = bytes(raw.tolist())
    header[name] = {"dtype": NAMES[y.dtype], "shape": list(y.shape), "data_offsets": [offset, offset + len(data)]}
    chunks.append(data)
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(sys.argv[4], "wb") as f:
    f.write(len(text).to_bytes(8, "little") + text + b"".join(chunks))
)";

// "line 123 (node '/layer1/Conv')" from a traceback through model.py.
std::string failing_line(const std::string& output, const std::string& source) {
  std::regex frame(R"(File "[^"]*model\.py", line (\d+))");
  std::string where;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), frame); it != std::sregex_iterator(); ++it) where = (*it)[1];
  if (where.empty()) return "";
  std::vector<std::string> lines = split(source, '\n');
  size_t n = static_cast<size_t>(std::stoul(where));
  std::string text = fmt::format("model.py line {}", where);
  if (n >= 1 && n <= lines.size()) {
    size_t hash = lines[n - 1].rfind("  # ");
    if (hash != std::string::npos) text += fmt::format(" (node {})", lines[n - 1].substr(hash + 4));
  }
  return text;
}

std::string last_line(const std::string& output) {
  std::vector<std::string> lines = split(output, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (!it->empty()) return *it;
  return "no output";
}

Result<runtime::Tensor> tensor_of(const io::SafetensorsEntry& e) {
  if (auto n = runtime::checked_shape_size(e.shape); !n.ok()) return n.error().in(fmt::format("output '{}'", e.name));
  runtime::Tensor t(static_cast<runtime::DataType>(e.data_type), e.shape);
  if (t.nbytes() != e.bytes.size()) return make_error("output '{}': size does not match its shape", e.name);
  if (!e.bytes.empty()) std::memcpy(t.mutable_raw(), e.bytes.data(), e.bytes.size());
  return t;
}

// The one place the check compares an output: compare's element rule, plus
// the mean squared error the seeds judge conversions by (1e-7).
PytorchOutputCheck compare_output(const std::string& name, const runtime::Datum& expected, const runtime::Tensor& actual,
                                  const std::vector<const runtime::Tensor*>& referees = {}) {
  PytorchOutputCheck check;
  check.name = name;
  check.type = expected.describe();
  const runtime::Tensor& ref = expected.tensor();
  double max_ref = 0, squares = 0;
  if (runtime::is_floating(ref.dtype()) && ref.dtype() == actual.dtype() && ref.shape() == actual.shape()) {
    Status st = runtime::dispatch_float(ref.dtype(), [&]<class T>() -> Status {
      for (int64_t i = 0; i < ref.numel(); ++i) {
        double r = static_cast<double>(ref.data<T>()[i]), a = static_cast<double>(actual.data<T>()[i]);
        if (std::isfinite(r)) max_ref = std::max(max_ref, std::fabs(r));
        if (std::isfinite(r) && std::isfinite(a)) squares += (r - a) * (r - a);
      }
      return {};
    });
    (void)st;
    if (ref.numel() > 0) check.mse = squares / static_cast<double>(ref.numel());
  }
  Difference d = compare_values(expected, runtime::Datum(actual), 0.0, 1e-4 * std::max(1.0, max_ref));
  auto shapes_agree = [&] { return ref.dtype() == actual.dtype() && ref.shape() == actual.shape(); };
  check.max_abs_diff = d.max_abs_diff;
  check.close = d.close && check.mse < 1e-7;
  check.detail = d.close ? (check.close ? "" : fmt::format("MSE {:.3g}", check.mse)) : d.detail;
  if (check.close || !shapes_agree() || !runtime::is_floating(actual.dtype())) return check;
  // Some models amplify rounding (random inputs far from the data they were
  // trained on): their float32 outputs move by more than any fixed
  // tolerance. The referees measure how much: the module in float64, and in
  // float32 on inputs a few units in the last place away. Two float32
  // implementations differ by about that much when both are right, while a
  // conversion bug moves the outputs whatever the rounding and stays far
  // outside it unless rounding alone already moves them as much.
  double noise = 0;
  for (const runtime::Tensor* referee : referees) {
    if (referee == nullptr || referee->shape() != actual.shape() || !runtime::is_floating(referee->dtype())) continue;
    Status st = runtime::dispatch_float(actual.dtype(), [&]<class T>() -> Status {
      return runtime::dispatch_float(referee->dtype(), [&]<class R>() -> Status {
        for (int64_t i = 0; i < actual.numel(); ++i) {
          double delta = std::fabs(static_cast<double>(actual.data<T>()[i]) - static_cast<double>(referee->data<R>()[i]));
          if (std::isfinite(delta)) noise = std::max(noise, delta);
        }
        return {};
      });
    });
    (void)st;
  }
  check.float32_error = noise;
  if (check.max_abs_diff <= 3 * noise) {
    check.close = true;
    check.detail.clear();
  }
  return check;
}

// Whether `python` runs and imports torch.
bool python_has_torch(const std::string& python) {
  auto run = io::run_process({python, "-c", "import torch"}, std::chrono::seconds(120));
  return run.ok() && !run->timed_out && run->exit_code == 0;
}

Status check_in_python(const ir::Model& model, const PytorchSource& source, const fs::path& staged,
                       const PytorchConvertOptions& options, PytorchConvertReport& report) {
  std::shared_ptr<const ir::Model> borrowed(std::shared_ptr<const ir::Model>{}, &model);
  ONNXKIT_ASSIGN(auto session, runtime::Session::create(borrowed));
  // Symbolic dims take 2 (not 1, which hides batch bugs), more where the
  // model does not run so: a 3x3 window over a height of 2, frames of 256
  // out of 2 samples (find_runnable_inputs, as simplify's check).
  RunnableInputOptions search;
  search.inputs.random = true;
  search.inputs.seed = options.seed;
  search.inputs.shapes = options.check_shapes;
  auto found = find_runnable_inputs(*session, search);
  if (!found.ok())
    return make_error("onnxkit's runtime does not run on the check's random inputs: {}; give --shape, or convert with --no-check",
                      found.error().message());
  const runtime::NamedValues& feeds = found->feeds.front();
  const std::vector<runtime::Datum>* expected = &found->outputs.front();

  ONNXKIT_ASSIGN(TempDir scratch, TempDir::create(fs::temp_directory_path(), "onnxkit-pytorch-check"));
  std::vector<PytorchTensor> input_tensors;
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (!feeds[i].second.is_tensor()) return make_error("input '{}' is not a tensor", feeds[i].first);
    input_tensors.push_back({fmt::format("input_{}", i), feeds[i].second.tensor()});
  }
  fs::path inputs_file = scratch.path() / "inputs.safetensors", outputs_file = scratch.path() / "outputs.safetensors";
  fs::path runner = scratch.path() / "run_generated.py";
  ONNXKIT_TRY(io::write_safetensors(inputs_file, entries_of(input_tensors)));
  ONNXKIT_TRY(io::write_file_atomically(runner, kRunner));
  auto run_module = [&](const fs::path& outputs, bool referee) -> Result<std::vector<io::SafetensorsEntry>> {
    std::vector<std::string> argv = {
        options.python,       runner.string(), (staged / "model.py").string(), (staged / "weights.safetensors").string(),
        inputs_file.string(), outputs.string()};
    if (referee) argv.push_back("--referee");
    ONNXKIT_ASSIGN(io::ProcessResult run, io::run_process(argv, options.timeout));
    if (run.timed_out) return make_error("the generated module ran past {} s in Python", options.timeout.count());
    if (run.exit_code != 0) {
      std::string where = failing_line(run.output, source.model_py);
      return make_error("the generated module fails in Python{}{}: {}", referee ? " (its rounding referee run)" : "",
                        where.empty() ? "" : " at " + where, last_line(run.output));
    }
    return io::read_safetensors(outputs);
  };
  ONNXKIT_ASSIGN(auto produced, run_module(outputs_file, false));
  std::vector<std::tuple<size_t, size_t, runtime::Tensor>> actuals;  // (report index, output index, output)
  for (size_t k = 0; k < expected->size(); ++k) {
    const std::string& name = session->outputs()[k].name;
    const runtime::Datum& ref = (*expected)[k];
    auto it =
        std::find_if(produced.begin(), produced.end(), [&](const auto& e) { return e.name == fmt::format("output_{}", k); });
    if (!ref.is_tensor()) {
      report.outputs.push_back({name, ref.describe(), false});
      continue;
    }
    if (it == produced.end()) return make_error("output '{}': the generated module returned no tensor for it", name);
    ONNXKIT_ASSIGN(runtime::Tensor actual, tensor_of(*it));
    if (source.random) {  // other numbers by design: the type and shape must still agree
      PytorchOutputCheck check{name, ref.describe(), false};
      check.close = ref.tensor().dtype() == actual.dtype() && ref.tensor().shape() == actual.shape();
      if (!check.close) check.detail = fmt::format("got {}", runtime::Datum(actual).describe());
      report.outputs.push_back(check);
      continue;
    }
    report.outputs.push_back(compare_output(name, ref, actual));
    actuals.emplace_back(report.outputs.size() - 1, k, std::move(actual));
  }
  bool all_close = std::all_of(report.outputs.begin(), report.outputs.end(), [](const auto& o) { return o.close; });
  if (!all_close) {
    // A second run tells rounding from a wrong conversion.
    auto referee = run_module(scratch.path() / "referee.safetensors", true);
    if (referee.ok()) {
      auto find = [&](const std::string& key) -> std::optional<runtime::Tensor> {
        auto it = std::find_if(referee->begin(), referee->end(), [&](const auto& e) { return e.name == key; });
        if (it == referee->end()) return std::nullopt;
        auto t = tensor_of(*it);
        return t.ok() ? std::optional<runtime::Tensor>(std::move(*t)) : std::nullopt;
      };
      for (auto& [index, k, actual] : actuals) {
        PytorchOutputCheck& check = report.outputs[index];
        if (check.close) continue;
        auto nudged = find(fmt::format("output_{}", k)), wide = find(fmt::format("wide_{}", k));
        check = compare_output(check.name, (*expected)[k], actual, {nudged ? &*nudged : nullptr, wide ? &*wide : nullptr});
      }
    }
  }
  report.checked = true;
  for (const PytorchOutputCheck& o : report.outputs)
    if (!o.close)
      return make_error(
          "output '{}' of the generated module differs from onnxkit's runtime ({}; max abs diff {:.3g}, MSE {:.3g}{}); "
          "--no-check writes it anyway",
          o.name, o.detail, o.max_abs_diff, o.mse,
          o.float32_error > 0 ? fmt::format(", while rounding alone moves it by {:.3g}", o.float32_error) : "");
  return {};
}

// Moves the staged files into `out_dir`: the whole folder when it is new,
// else each file over its old version.
Status publish(TempDir& staged, const fs::path& out_dir) {
  std::error_code ec;
  if (!fs::exists(out_dir, ec)) {
    fs::rename(staged.path(), out_dir, ec);
    if (ec) return make_error("{}: cannot create it: {}", out_dir.string(), ec.message());
    staged.release();
    return {};
  }
  for (const char* file : {"weights.safetensors", "model.py"}) {
    fs::rename(staged.path() / file, out_dir / file, ec);
    if (ec) return make_error("{}: cannot write {}: {}", out_dir.string(), file, ec.message());
  }
  return {};
}

}  // namespace

Result<PytorchConvertReport> convert_to_pytorch(const fs::path& path, const fs::path& out_dir,
                                                const PytorchConvertOptions& options) {
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    return make_error("{}: exists and is not a folder (--to pytorch writes a folder)", out_dir.string());
  fs::path parent = out_dir.parent_path().empty() ? fs::path(".") : out_dir.parent_path();
  if (!fs::is_directory(parent, ec)) return make_error("{}: folder '{}' does not exist", out_dir.string(), parent.string());

  Progress progress(options.progress);
  progress.size_up(fs::file_size(path, ec), 0);
  progress.step("reading the model");
  ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> model, ir::load_model(path));
  progress.size_up(model->file_size(), model->graph().nodes().size());
  progress.step("writing PyTorch source");
  analysis::apply_inferred_types(*model);
  PytorchSourceOptions source_options = options.source;
  if (source_options.source_name.empty()) source_options.source_name = path.filename().string();
  auto generated = generate_pytorch_source(model->graph(), source_options);
  if (!generated.ok()) return generated.error().in(path.string());
  const PytorchSource& source = *generated;

  // Written next to OUT_DIR first, published only when all went well.
  ONNXKIT_ASSIGN(TempDir staged, TempDir::create(parent, "." + out_dir.filename().string() + ".tmp"));
  ONNXKIT_TRY(io::write_file_atomically(staged.path() / "model.py", source.model_py));
  ONNXKIT_TRY(io::write_safetensors(staged.path() / "weights.safetensors", entries_of(source.tensors),
                                    {{"format", "pt"}, {"source", path.filename().string()}}));

  PytorchConvertReport report;
  report.class_name = source.class_name;
  report.modules = source.modules;
  report.tensors = source.tensors.size();
  report.frozen_inputs = source.frozen_inputs;
  report.source_bytes = source.model_py.size();
  report.weights_bytes = fs::file_size(staged.path() / "weights.safetensors", ec);

  bool check = options.check == PytorchCheck::on;
  if (options.check == PytorchCheck::automatic) {
    check = python_has_torch(options.python);
    if (!check)
      report.not_checked = fmt::format("'{}' with torch not found (--python names another interpreter)", options.python);
  } else if (options.check == PytorchCheck::off) {
    report.not_checked = "--no-check";
  }
  if (check) {
    if (options.check == PytorchCheck::on && !python_has_torch(options.python))
      return make_error("--check: '{}' cannot import torch", options.python);
    progress.step("checking the module in Python");
    Status checked = check_in_python(*model, source, staged.path(), options, report);
    if (!checked.ok()) return checked.error().in(fmt::format("{}: check failed, nothing written", path.string()));
  }
  ONNXKIT_TRY(publish(staged, out_dir));
  report.model_py = out_dir / "model.py";
  report.weights = out_dir / "weights.safetensors";
  return report;
}

std::string render_pytorch_text(const PytorchConvertReport& report) {
  std::string text = fmt::format("wrote {} (class {}, {}, {} modules) + {} ({}, {} tensors)\n", report.model_py.string(),
                                 report.class_name, human_bytes(report.source_bytes), report.modules, report.weights.string(),
                                 human_bytes(report.weights_bytes), report.tensors);
  if (report.frozen_inputs > 0)
    text += fmt::format("{} initializers listed as graph inputs are held as weights, not forward() arguments\n",
                        report.frozen_inputs);
  if (!report.checked) {
    text += fmt::format("not checked: {}\n", report.not_checked);
    return text;
  }
  size_t width = 6;
  for (const auto& o : report.outputs) width = std::max(width, o.name.size());
  text += fmt::format("check against onnxkit's runtime on random inputs:\n  {:<{}}  {:<22} {:>12} {:>12}\n", "output", width,
                      "type", "max abs", "MSE");
  for (const auto& o : report.outputs) {
    if (!o.compared) text += fmt::format("  {:<{}}  {:<22} not compared (random, or not a tensor)\n", o.name, width, o.type);
    else if (o.float32_error > 0)
      text += fmt::format("  {:<{}}  {:<22} {:>12.3g} {:>12.3g}  within float32 rounding, which alone moves it by {:.3g}\n",
                          o.name, width, o.type, o.max_abs_diff, o.mse, o.float32_error);
    else text += fmt::format("  {:<{}}  {:<22} {:>12.3g} {:>12.3g}\n", o.name, width, o.type, o.max_abs_diff, o.mse);
  }
  return text;
}

}  // namespace onnxkit::tools
