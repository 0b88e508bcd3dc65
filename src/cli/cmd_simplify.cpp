#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "passes/fold.h"
#include "passes/pass.h"
#include "tools/edit.h"
#include "tools/simplify.h"
#include "util/text.h"

namespace onnxkit::cli {

Command add_simplify_command(CLI::App& root) {
  struct Flags {
    std::string in, out;
    std::vector<std::string> input_shapes;
    bool keep_dynamic = false;
    std::vector<std::string> inputs;
    int check = 1;
    uint64_t seed = 0;
    double rtol = 1e-4, atol = 1e-5;
    std::string skip, exclude;
    bool no_fold = false;
    uint64_t fold_limit = 1 << 20;
    bool remove_unused_inputs = false;
    bool freeze_initializers = false;
    bool inline_functions = false;
    bool verify_each_pass = false;
    int64_t target_opset = 0;
    bool external = false;
    uint64_t threshold = 1024;
    bool report = false;
    bool list_passes = false;
    bool quiet = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "simplify", "Fold constants and remove glue operators, checking the result against the original before writing");
  app->add_option("IN", flags->in, "ONNX model to read");
  app->add_option("OUT", flags->out, "Simplified model to write (atomically; nothing is written if the check fails)");
  app->add_option("--input-shape", flags->input_shapes,
                  "Set an input's shape, numbers or symbols: input:1,3,224,224 or input:batch,3,224,224 (repeatable)");
  app->add_flag("--keep-dynamic", flags->keep_dynamic,
                "Keep every symbolic dim symbolic: an --input-shape that would fix one is an error "
                "(dims stay symbolic by default; this makes it a promise)");
  app->add_option("--check", flags->check, "Random input sets to compare original and result on (default 1; 0: no check)")
      ->check(CLI::NonNegativeNumber);
  app->add_option(
      "--input", flags->inputs,
      "Real data for the check: NAME=FILE (.npy, .pb), NAME=VALUE (sr=16000, as run --input) or FILE.npz (repeatable)");
  app->add_option("--seed", flags->seed, "Seed of the check's random inputs");
  app->add_option("--rtol", flags->rtol, "Relative tolerance of the check (1e-4)");
  app->add_option("--atol", flags->atol, "Absolute tolerance of the check (1e-5)");
  app->add_flag("--verify-each-pass", flags->verify_each_pass,
                "Check after every pass that changed something, and name the pass that changed the numbers");
  app->add_option("--target-opset", flags->target_opset,
                  "Convert the simplified model to this default-domain opset (ONNX's version converter, up to 17 in "
                  "this build; onnxkit's own steps from 17 to 21), simplify again and check the result")
      ->check(CLI::PositiveNumber);
  app->add_option("--skip", flags->skip, "Passes not to run, comma-separated (see --list-passes)");
  app->add_option("--exclude-node", flags->exclude, "Nodes (by name) to keep as they are: not folded, not rewritten");
  app->add_flag("--no-fold", flags->no_fold, "Do not fold constants (--skip fold-constants)");
  app->add_option("--fold-limit", flags->fold_limit,
                  "Do not fold a node whose output is over this size and larger than its inputs (1MiB; accepts 4KB, 16MiB...)")
      ->transform(CLI::AsSizeValue(false));
  app->add_flag("--remove-unused-inputs", flags->remove_unused_inputs, "Also drop graph inputs that feed nothing");
  app->add_flag("--freeze-initializers", flags->freeze_initializers,
                "Drop initializers from the graph inputs first (old exports list every weight there), so that they "
                "fold and fuse as the constants they are");
  app->add_flag("--inline-functions", flags->inline_functions,
                "Expand the calls of model-local functions into plain nodes first (as the runtime does), so that "
                "the passes see inside them; the functions are then dropped");
  add_external_data_flags(*app, flags->external, flags->threshold);
  app->add_flag("--report", flags->report, "Also print what each pass changed, node by node");
  app->add_flag("--list-passes", flags->list_passes, "List the passes in the order they run, and exit");
  add_quiet_flag(*app, flags->quiet);
  app->footer(
      progress_footer("Shapes are inferred, constants folded and passes run until nothing changes. Symbolic\n"
                      "dims stay symbolic unless --input-shape sets them, and shape glue that depends on them is\n"
                      "still written as constants where it can be (Reshape to [0,-1], Resize by constant scales).\n"
                      "Before writing, original and result run on the same random inputs and every output must\n"
                      "agree within --rtol/--atol; on a mismatch nothing is written, the exit code is 1, and the\n"
                      "message names the output and the first tensor that differs. The inputs are ones the\n"
                      "original runs on: symbolic dims as 2, else the smallest of 16, 32, ... 1024 its windows\n"
                      "and reshapes accept (the batch as 2, else 1); an integer scalar compared with constants\n"
                      "(Equal(sample_rate, 16000)) takes those values, one input set each, and a random one.\n"
                      "If none runs, the error says what was tried: give --input or --input-shape then.",
                      "Examples:\n"
                      "  onnxkit simplify big.onnx out.onnx --quiet   # no progress line, even on a terminal\n"
                      "  onnxkit simplify model.onnx model.sim.onnx\n"
                      "  onnxkit simplify model.onnx out.onnx --input-shape input:1,3,224,224 --report\n"
                      "  onnxkit simplify model.onnx out.onnx --skip fuse-bn-into-conv --exclude-node Resize_12\n"
                      "  onnxkit simplify exported_with_functions.onnx out.onnx --inline-functions\n"
                      "  onnxkit simplify model_opset13.onnx model_opset18.onnx --target-opset 18\n"
                      "  onnxkit simplify model.onnx out.onnx --input image=image.npy --check 3 --verify-each-pass"));
  return {app, [app, flags] {
            if (flags->list_passes) {
              for (const auto& pass : passes::all_passes()) fmt::print("{:<36} {}\n", pass->name(), pass->summary());
              return 0;
            }
            if (flags->in.empty() || flags->out.empty()) {
              fmt::print(stderr, "onnxkit simplify: error: IN and OUT are required (see --help)\n");
              return kExitUsage;
            }
            tools::SimplifyToolOptions options;
            options.keep_dynamic = flags->keep_dynamic;
            for (const std::string& flag : flags->input_shapes) {
              auto shape = tools::parse_input_shape_flag(flag);
              if (!shape.ok()) return report_error(*app, shape.error());
              options.input_shapes.push_back(std::move(shape).value());
            }
            for (const std::string& flag : flags->inputs) {
              auto input = tools::parse_input_flag(flag);
              if (!input.ok()) return report_error(*app, input.error());
              options.check_inputs.files.push_back(std::move(input).value());
            }
            options.check_inputs.seed = flags->seed;
            options.check_runs = flags->check;
            options.rtol = flags->rtol;
            options.atol = flags->atol;
            options.verify_each_pass = flags->verify_each_pass;
            options.target_opset = flags->target_opset;
            for (const std::string& name : split(flags->skip, ','))
              if (!name.empty()) options.simplify.passes.skipped_passes.insert(name);
            for (const std::string& name : split(flags->exclude, ','))
              if (!name.empty()) options.simplify.passes.excluded_nodes.insert(name);
            options.simplify.passes.remove_unused_inputs = flags->remove_unused_inputs;
            options.freeze_initializers = flags->freeze_initializers;
            options.inline_functions = flags->inline_functions;
            if (flags->no_fold) options.simplify.passes.skipped_passes.emplace(passes::kFoldConstants);
            options.simplify.passes.folding.size_limit = flags->fold_limit;
            options.save.external = flags->external ? io::ExternalDataPolicy::all : io::ExternalDataPolicy::keep;
            options.save.threshold = flags->threshold;
            ProgressLine progress(*app, flags->quiet);
            options.progress = progress.callback();
            auto report = tools::simplify_file(flags->in, flags->out, options);
            progress.finish();
            if (!report.ok()) return report_error(*app, report.error());
            fmt::print("{}", tools::render_simplify_text(*report, flags->report));
            return 0;
          }};
}

}  // namespace onnxkit::cli
