#include "cli/input_flags.h"

namespace onnxkit::cli {

void add_input_flags(CLI::App& app, InputFlags& flags, bool with_random) {
  app.add_option("--input", flags.texts.inputs,
                 "NAME=FILE (.npy, .npz, .pb) or NAME=VALUE, a literal as edit --freeze-input reads it: 16000, "
                 "[1,2], int64:[[1,2,3]] (repeatable; a bare FILE.npz feeds every array by name)");
  app.add_option("--shape", flags.texts.shapes, "NAME:D0,D1,...: the shape of a random input with symbolic dims (repeatable)");
  app.add_option("--dim", flags.texts.dims,
                 "SYMBOL=N: symbolic dim SYMBOL is N in every input declaring it, e.g. batch=8 (repeatable)");
  app.add_option("--val-range", flags.texts.ranges,
                 "NAME:LO,HI: random values of input NAME from LO to HI (integers inclusive); LO,HI: of every input "
                 "(default: floats in [0,1), integers in [0,10) and below the size of any table they index)");
  if (with_random) app.add_flag("--random", flags.random, "Fill the inputs no --input gives with random data");
  app.add_option("--seed", flags.seed, "Seed of the random inputs (0)");
}

Result<tools::InputOptions> input_options(const InputFlags& flags) {
  ONNXKIT_ASSIGN(tools::InputOptions options, tools::parse_input_flags(flags.texts));
  options.random = flags.random;
  options.seed = flags.seed;
  return options;
}

}  // namespace onnxkit::cli
