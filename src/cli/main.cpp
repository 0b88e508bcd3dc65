#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

// Protobuf logs parse problems on its own; our errors already say it.
void quiet_protobuf(google::protobuf::LogLevel, const char*, int, const std::string&) {}

}  // namespace

int main(int argc, char** argv) {
  using namespace onnxkit::cli;
  google::protobuf::SetLogHandler(quiet_protobuf);

  CLI::App app{"onnxkit: inspect, check, simplify, edit, run, benchmark and convert ONNX models, with no Python at run time."};
  app.name("onnxkit");
  app.require_subcommand(1);
  app.set_version_flag("--version", "onnxkit 0.1.0");
  app.footer("Run 'onnxkit COMMAND --help' (or 'onnxkit help COMMAND') for a command's options and examples.");

  std::vector<Command> commands = {add_info_command(app),   add_check_command(app), add_convert_command(app),
                                   add_run_command(app),    add_bench_command(app), add_simplify_command(app),
                                   add_shapes_command(app), add_edit_command(app)};
  commands.push_back(add_draw_command(app));
  commands.insert(commands.end(), {add_compare_command(app), add_debug_command(app)});

  // `onnxkit help [COMMAND]` is `onnxkit [COMMAND] --help`.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "help") {
    args.erase(args.begin());
    args.resize(std::min<size_t>(args.size(), 1));
    // An unknown name stays a command to parse, which names the closest one.
    const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
    if (args.empty() ||
        std::any_of(commands.begin(), commands.end(), [&](const CLI::App* c) { return c->get_name() == args.front(); }))
      args.push_back("--help");
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return report_usage_error(app, e, args);
  }
  std::string prefix = "onnxkit";  // "onnxkit CMD", as every error starts
  try {
    for (const Command& c : commands) {
      if (!c.app->parsed()) continue;
      prefix += " " + c.app->get_name();
      return c.run();
    }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", prefix.c_str());
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: internal error: %s\n", prefix.c_str(), e.what());
    return kExitFailure;
  }
  return kExitUsage;
}
