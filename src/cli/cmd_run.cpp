#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "tools/run.h"
#include "util/text.h"

namespace onnxkit::cli {

Command add_run_command(CLI::App& root) {
  struct Flags {
    std::string model;
    InputFlags inputs;
    int threads = 0;
    std::string output_dir;
    std::string outputs;
    std::string format = "npy";
    double timeout = 0;
    std::string save_inputs;
    int warm_runs = -1;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("run", "Run a model on onnxkit's CPU runtime and save its outputs");
  app->add_option("MODEL", flags->model, "ONNX model file")->required();
  add_input_flags(*app, flags->inputs, true);
  app->add_option("--threads", flags->threads, "Threads per run (0, as bench: one per core)")->check(CLI::Range(0, 1024));
  app->add_option("--warm-runs", flags->warm_runs,
                  "Runs after the first, timed apart from it (default: 1, none when the first took over 2 s)")
      ->check(CLI::Range(0, 1 << 20));
  app->add_option("--output-dir", flags->output_dir,
                  "Write output_K.npy (or .pb) and outputs.json here, as ONNX's backend test data does");
  app->add_option("--outputs", flags->outputs,
                  "Which values to return: 'all' (every intermediate value too) or NAME,NAME,... (default: the graph's outputs)");
  app->add_option("--save-inputs", flags->save_inputs,
                  "Write the inputs used (given or random) to this .npz, to replay the run or compare against it");
  app->add_option("--format", flags->format, "File format of the outputs: npy or pb")->check(CLI::IsMember({"npy", "pb"}));
  app->add_option("--timeout", flags->timeout,
                  "Stop the run after SECONDS with an error (checked between nodes and between a Loop's iterations)")
      ->check(CLI::NonNegativeNumber);
  app->footer(
      "Every input must come from --input or --random; random inputs with symbolic dims need\n"
      "--dim SYMBOL=N (every input declaring SYMBOL) or --shape. --input takes a file or a value\n"
      "typed as edit --freeze-input reads it: a number or [list] of the input's declared type, or\n"
      "TYPE:[...]. The first run pays one-time costs (memory, packed weights); the warm run\n"
      "after it shows the steady latency.\n"
      "With --outputs all, every tensor the graph computes is returned (the model file is\n"
      "left as it is): compare them with another framework to find the first layer that differs.\n"
      "numpy has no bfloat16: a bfloat16 input reads uint16 (or int16) data as the bits of its\n"
      "elements, e.g. np.save('x.npy', ml_dtypes_array.view(np.uint16)).\n\n"
      "Examples:\n"
      "  onnxkit run model.onnx --random --shape input:1,3,224,224\n"
      "  onnxkit run model.onnx --input input=image.npy --output-dir out/\n"
      "  onnxkit run vad.onnx --random --input sr=16000 --dim batch=1 --dim samples=512\n"
      "  onnxkit run gpt.onnx --input input_ids=int64:[[1,2,3]]\n"
      "  onnxkit run bert.onnx --random --val-range input_ids:0,30521 --val-range attention_mask:1,1\n"
      "  onnxkit run model.onnx --random --outputs all --output-dir layers/ --format pb\n"
      "  onnxkit run untrusted.onnx --random --timeout 60\n"
      "  onnxkit run model.onnx --random --outputs all --output-dir ref/ --save-inputs ref/inputs.npz\n"
      "  onnxkit compare edited.onnx --reference ref/    # every tensor against this run's");
  return {app, [app, flags] {
            auto inputs = input_options(flags->inputs);
            if (!inputs.ok()) return report_usage_error(*app, inputs.error());
            tools::RunOptions options;
            options.inputs = std::move(inputs).value();
            options.threads = flags->threads;
            options.output_dir = flags->output_dir;
            options.save_inputs = flags->save_inputs;
            options.format = flags->format == "pb" ? tools::TensorFormat::pb : tools::TensorFormat::npy;
            options.timeout_seconds = flags->timeout;
            options.warm_runs = flags->warm_runs;
            if (flags->outputs == "all") options.all_outputs = true;
            else if (!flags->outputs.empty()) options.outputs = split(flags->outputs, ',');
            auto report = tools::run_model(flags->model, options);
            if (!report.ok()) return report_error(*app, report.error());
            fmt::print("{}", tools::render_run_text(*report));
            return 0;
          }};
}

}  // namespace onnxkit::cli
