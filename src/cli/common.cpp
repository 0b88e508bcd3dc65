#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "util/text.h"

namespace onnxkit::cli {
namespace {

// The command line's words that look like flags but that `command` does not
// take, each with the closest flag it does take.
std::string unknown_flags(const CLI::App& command, const std::vector<std::string>& args) {
  std::vector<std::string> known;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) known.push_back("--" + name);
    for (const std::string& name : option->get_snames()) known.push_back("-" + name);
  }
  std::vector<std::string> unknown;
  for (const std::string& arg : args) {
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) continue;  // -1 is a value
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), flag) != known.end()) continue;
    unknown.push_back(fmt::format("'{}'{}", flag, did_you_mean(flag, known)));
  }
  return join(unknown, ", ");
}

}  // namespace

int report_usage_error(CLI::App& root, const CLI::ParseError& error, const std::vector<std::string>& args) {
  if (error.get_exit_code() == 0) return root.exit(error);  // --help, --version
  const CLI::App* command = nullptr;
  for (const CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->parsed()) command = sub;
  if (command == nullptr) {
    std::vector<std::string> names;
    for (const CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    const std::string first = args.empty() ? "" : args.front();
    if (first.empty() || first[0] == '-')
      fmt::print(stderr, "onnxkit: error: give a command: {} (onnxkit --help lists them)\n", join(names, ", "));
    else
      fmt::print(stderr, "onnxkit: error: unknown command '{}'{} (commands: {})\n", first, did_you_mean(first, names),
                 join(names, ", "));
    return kExitUsage;
  }
  std::string message = error.what();
  if (const std::string flags = unknown_flags(*command, args);
      !flags.empty() && dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr)
    message = fmt::format("unknown option{} {}", flags.find(", ") != std::string::npos ? "s" : "", flags);
  return report_usage_error(*command, Error(message));
}

void add_external_threshold_option(CLI::App& command, uint64_t& threshold) {
  const CLI::Validator not_negative(
      [](const std::string& text) { return text.starts_with('-') ? "a size cannot be negative" : ""; }, "SIZE");
  command.add_option("--external-threshold", threshold, "Size from which a tensor goes external (1024; 4KB, 1MiB...)")
      ->check(not_negative)
      ->transform(CLI::AsSizeValue(false));
}

void add_external_data_flags(CLI::App& command, bool& external, uint64_t& threshold) {
  command.add_flag("--external-data", external, "Store tensors of at least --external-threshold bytes in OUT.data");
  add_external_threshold_option(command, threshold);
}

namespace {

// "debug reduce" for a command under another, as the user typed it.
std::string command_path(const CLI::App& command) {
  std::string path = command.get_name();
  for (const CLI::App* parent = command.get_parent(); parent != nullptr && parent->get_parent() != nullptr;
       parent = parent->get_parent())
    path = parent->get_name() + " " + path;
  return path;
}

}  // namespace

int report_usage_error(const CLI::App& command, const Error& error) {
  const std::string path = command_path(command);
  fmt::print(stderr, "onnxkit {}: error: {} (onnxkit {} --help shows its options)\n", path, error.message(), path);
  return kExitUsage;
}

int report_error(const CLI::App& command, const Error& error) {
  fmt::print(stderr, "onnxkit {}: error: {}\n", command_path(command), error.message());
  return kExitFailure;
}

}  // namespace onnxkit::cli
