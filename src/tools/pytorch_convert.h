#pragma once
// `onnxkit convert MODEL --to pytorch OUT_DIR`: an ONNX model back to
// readable PyTorch source, OUT_DIR/model.py (one nn.Module, a load() that
// reads the weights, a __main__ that runs it), and its weights,
// OUT_DIR/weights.safetensors. The generator is C++ (no Python needed to
// convert); Python with torch only runs the check, which compares the
// generated module with onnxkit's runtime on random inputs.
//
// The interface of every generated model.py:
//   class <Name>(nn.Module)   forward(*graph inputs) -> output, or a tuple
//   load(weights=None)        the module in eval mode, weights from
//                             weights.safetensors beside model.py (or a path)
//   read_safetensors(path)    {name: tensor}, with torch alone
//   example_inputs()          random inputs of the model's shapes

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "runtime/tensor.h"
#include "util/progress.h"
#include "util/result.h"

namespace onnxkit::tools {

struct PytorchSourceOptions {
  std::string class_name;   // empty: from source_name ("resnet18.onnx" -> Resnet18)
  std::string source_name;  // the model's file name, for the file's docstring
  // Dims of inputs for example_inputs(); symbolic dims not given here take 1.
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
};

struct PytorchTensor {
  std::string key;  // the state_dict key
  runtime::Tensor data;
};

struct PytorchSource {
  std::string model_py;
  std::vector<PytorchTensor> tensors;  // what weights.safetensors holds
  std::string class_name;
  size_t modules = 0;
  // Initializers that were graph inputs too (old exporters): the module holds
  // them as weights rather than taking them in forward().
  size_t frozen_inputs = 0;
  // The model draws random numbers (RandomNormal, Bernoulli...): its outputs
  // differ from any other run's.
  bool random = false;
};

// The generator: the source of one nn.Module for a model's main graph (with
// its sub-graphs), or an error naming the first node that cannot convert
// and why. The graph's values should carry their inferred types
// (analysis::apply_inferred_types): emitters read ranks and element types.
Result<PytorchSource> generate_pytorch_source(const ir::Graph& graph, const PytorchSourceOptions& options);

enum class PytorchCheck { automatic, on, off };  // automatic: when `python` imports torch

struct PytorchConvertOptions {
  PytorchSourceOptions source;
  PytorchCheck check = PytorchCheck::automatic;
  std::string python = "python3";
  // Input dims for the check (symbolic dims not given here take 2).
  std::vector<std::pair<std::string, std::vector<int64_t>>> check_shapes;
  uint64_t seed = 0;
  std::chrono::seconds timeout{600};
  ProgressFn progress;  // told each step of the work on a big model (util/progress.h)
};

// One output of the check: the generated module's against onnxkit's runtime.
struct PytorchOutputCheck {
  std::string name;
  std::string type;      // "float32[1,1000]"
  bool compared = true;  // false for values the check cannot carry (sequences), or random ones (type and shape only)
  bool close = true;     // max abs <= 1e-4 * max(1, max |ref|) and MSE < 1e-7; integers exactly
  double max_abs_diff = 0;
  double mse = 0;
  // When the outputs differ by more than the tolerance: how far rounding
  // alone moves the module's float32 output (its float64 run, and its run on
  // inputs a few units in the last place away). A difference within 3x of it is
  // rounding the model amplifies, and passes.
  double float32_error = 0;
  std::string detail;  // when not close
};

struct PytorchConvertReport {
  std::filesystem::path model_py, weights;
  uint64_t source_bytes = 0, weights_bytes = 0;
  std::string class_name;
  size_t modules = 0, tensors = 0, frozen_inputs = 0;
  bool checked = false;
  std::string not_checked;  // why not, when not
  std::vector<PytorchOutputCheck> outputs;
};

// Loads MODEL, generates, writes both files into OUT_DIR (created, or
// replacing those two files in it) only when everything succeeded, checking
// first unless told not to. A failed check is an error that names the output.
Result<PytorchConvertReport> convert_to_pytorch(const std::filesystem::path& model, const std::filesystem::path& out_dir,
                                                const PytorchConvertOptions& options);

std::string render_pytorch_text(const PytorchConvertReport& report);

}  // namespace onnxkit::tools
