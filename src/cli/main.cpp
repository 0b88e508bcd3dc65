#include <google/protobuf/stubs/logging.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include "cli/commands.h"

namespace {

// Protobuf logs parse problems on its own; our errors already say it.
void quiet_protobuf(google::protobuf::LogLevel, const char*, int, const std::string&) {}

// `bench` measures latency the way ONNX Runtime runs by default: worker
// threads spin between parallel regions instead of sleeping (waking a
// sleeping thread costs tens of microseconds, a third of a BERT encoder's
// time on 2 threads). OpenMP reads its wait policy once, when the process
// starts, so bench restarts itself with OMP_WAIT_POLICY=active unless the
// user chose a policy.
void spin_for_bench(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "bench") != 0 || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "active", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: then bench runs as it is
  unsetenv("OMP_WAIT_POLICY");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace onnxkit::cli;
  spin_for_bench(argc, argv);
  google::protobuf::SetLogHandler(quiet_protobuf);

  CLI::App app{"onnxkit: inspect, check, simplify, edit, run, benchmark and convert ONNX models, with no Python at run time."};
  app.name("onnxkit");
  app.require_subcommand(1);
  app.set_version_flag("--version", "onnxkit 0.1.0");
  app.footer("Run 'onnxkit COMMAND --help' for a command's options and examples.");

  std::vector<Command> commands = {add_info_command(app), add_check_command(app), add_convert_command(app),
                                  add_run_command(app), add_bench_command(app), add_simplify_command(app),
                                  add_shapes_command(app), add_edit_command(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  try {
    for (const Command& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "onnxkit: error: out of memory\n");
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onnxkit: internal error: %s\n", e.what());
    return kExitFailure;
  }
  return kExitUsage;
}
