#include "cli/input_flags.h"

namespace onnxkit::cli {

void add_input_flags(CLI::App& app, InputFlags& flags, bool with_random) {
  app.add_option("--input", flags.inputs, "NAME=FILE: an input from .npy, .npz or ONNX TensorProto .pb (repeatable; "
                                          "a bare FILE.npz feeds every array by name)");
  app.add_option("--shape", flags.shapes, "NAME:D0,D1,...: the shape of a random input with symbolic dims (repeatable)");
  if (with_random) app.add_flag("--random", flags.random, "Fill the inputs no --input gives with random data");
  app.add_option("--seed", flags.seed, "Seed of the random inputs (0)");
}

Result<tools::InputOptions> input_options(const InputFlags& flags) {
  tools::InputOptions options;
  for (const std::string& f : flags.inputs) {
    ONNXKIT_ASSIGN(auto parsed, tools::parse_input_flag(f));
    options.files.push_back(std::move(parsed));
  }
  for (const std::string& s : flags.shapes) {
    ONNXKIT_ASSIGN(auto parsed, tools::parse_shape_flag(s));
    options.shapes.push_back(std::move(parsed));
  }
  options.random = flags.random;
  options.seed = flags.seed;
  return options;
}

}  // namespace onnxkit::cli
