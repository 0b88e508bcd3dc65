// Runs every folder of ONNX's backend test data (model.onnx plus
// test_data_set_N/{input,output}_K.pb) through the runtime and compares with
// the expected outputs: rtol 1e-3, atol 1e-7 as ONNX's backend runner, NaN
// equal to NaN, exact for integers, bools and strings.
//
// Each folder runs in a child process, so a crash or a hang is reported
// against its folder. The committed expected-failures file is enforced both
// ways: a new failure fails the test, and so does an unexpected pass.
//
// usage: conformance DATA_DIR EXPECTED_FAILURES [--filter TEXT] [--update] [--timeout S]

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "io/tensor_file.h"
#include "ir/model.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"

namespace fs = std::filesystem;
using namespace onnxkit;
using runtime::DataType;
using runtime::Datum;
using runtime::Tensor;

namespace {

struct Outcome {
  std::string status;  // PASS, FAIL, UNSUPPORTED
  std::string reason;
};

// One line: the reason is recorded in a text file.
std::string flatten(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

Result<Datum> read_value(const fs::path& file, const onnx::TypeProto& type) {
  if (type.has_sequence_type()) {
    ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::SequenceProto>(file));
    return runtime::value_from_proto(proto);
  }
  if (type.has_optional_type()) {
    ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::OptionalProto>(file));
    return runtime::value_from_proto(proto);
  }
  ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::TensorProto>(file));
  // ONNX 1.12 wrote bfloat16 test tensors as uint16 (numpy has no bfloat16):
  // the bits are right, the declared type is not.
  if (proto.data_type() == onnx::TensorProto::UINT16 && type.tensor_type().elem_type() == onnx::TensorProto::BFLOAT16)
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  ONNXKIT_ASSIGN(Tensor t, runtime::tensor_from_proto(proto));
  return Datum(std::move(t));
}

double as_double(const Tensor& t, int64_t i) {
  double v = 0;
  (void)runtime::dispatch_numeric(t.dtype(), [&]<class T>() -> Status {
    v = static_cast<double>(t.data<T>()[i]);
    return {};
  });
  return v;
}

std::string compare_tensors(const Tensor& expected, const Tensor& actual) {
  if (expected.dtype() != actual.dtype())
    return fmt::format("element type {} instead of {}", to_string(actual.dtype()), to_string(expected.dtype()));
  if (expected.shape() != actual.shape())
    return fmt::format("shape {} instead of {}", runtime::shape_to_string(actual.shape()),
                       runtime::shape_to_string(expected.shape()));
  const DataType type = expected.dtype();
  for (int64_t i = 0; i < expected.numel(); ++i) {
    bool same;
    std::string e, a;
    if (type == DataType::string) {
      same = expected.data<std::string>()[i] == actual.data<std::string>()[i];
      e = expected.data<std::string>()[i], a = actual.data<std::string>()[i];
    } else if (type == DataType::boolean) {
      same = expected.data<bool>()[i] == actual.data<bool>()[i];
      e = std::to_string(expected.data<bool>()[i]), a = std::to_string(actual.data<bool>()[i]);
    } else if (type == DataType::complex64 || type == DataType::complex128) {
      auto get = [&](const Tensor& t, int part) {
        return type == DataType::complex64 ? static_cast<double>(t.data<float>()[2 * i + part]) : t.data<double>()[2 * i + part];
      };
      same = true;
      for (int part = 0; part < 2; ++part) {
        double x = get(expected, part), y = get(actual, part);
        same = same && std::abs(x - y) <= 1e-7 + 1e-3 * std::abs(x);
      }
      e = fmt::format("{}+{}i", get(expected, 0), get(expected, 1)), a = fmt::format("{}+{}i", get(actual, 0), get(actual, 1));
    } else {
      double x = as_double(expected, i), y = as_double(actual, i);
      if (runtime::is_floating(type)) {
        same = (std::isnan(x) && std::isnan(y)) || x == y || std::abs(x - y) <= 1e-7 + 1e-3 * std::abs(x);
      } else {
        same = x == y;
      }
      e = fmt::format("{}", x), a = fmt::format("{}", y);
    }
    if (!same) return fmt::format("element {} is {}, expected {}", i, a, e);
  }
  return "";
}

std::string compare_values(const Datum& expected, const Datum& actual) {
  if (expected.is_tensor()) {
    if (!actual.is_tensor()) return "got " + actual.describe() + ", expected a tensor";
    return compare_tensors(expected.tensor(), actual.tensor());
  }
  if (expected.is_sequence()) {
    if (!actual.is_sequence()) return "got " + actual.describe() + ", expected a sequence";
    const auto& e = expected.sequence().items;
    const auto& a = actual.sequence().items;
    if (e.size() != a.size()) return fmt::format("sequence of {} instead of {}", a.size(), e.size());
    for (size_t i = 0; i < e.size(); ++i) {
      std::string d = compare_tensors(e[i], a[i]);
      if (!d.empty()) return fmt::format("sequence item {}: {}", i, d);
    }
    return "";
  }
  if (expected.is_optional()) {
    if (!actual.is_optional()) return "got " + actual.describe() + ", expected an optional";
    const auto& e = expected.optional().value;
    const auto& a = actual.optional().value;
    if (!e || !a) return (!e && !a) ? "" : "optional emptiness differs";
    return compare_values(*e, *a);
  }
  return "";
}

Outcome run_folder(const fs::path& folder) {
  auto model = ir::load_model(folder / "model.onnx");
  if (!model.ok()) return {"FAIL", "load: " + model.error().message()};
  std::shared_ptr<const ir::Model> shared(std::move(model).value());
  auto session = runtime::Session::create(shared);
  if (!session.ok()) {
    const std::string& m = session.error().message();
    bool unsupported = m.find("unsupported operator") != std::string::npos || m.find("is not supported") != std::string::npos;
    return {unsupported ? "UNSUPPORTED" : "FAIL", "session: " + m};
  }
  // Feeds go, in order, to the inputs that are not initializers.
  std::vector<const ir::Value*> inputs;
  for (const ir::Value* v : shared->graph().inputs())
    if (!v->is_constant()) inputs.push_back(v);
  const auto& outputs = shared->graph().outputs();

  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_")) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {"FAIL", "no test_data_set folder"};
  for (const fs::path& set : sets) {
    runtime::NamedValues feeds;
    for (size_t k = 0; k < inputs.size(); ++k) {
      fs::path file = set / fmt::format("input_{}.pb", k);
      if (!fs::exists(file)) continue;  // an omitted optional input
      auto value = read_value(file, inputs[k]->type());
      if (!value.ok()) return {"FAIL", "input: " + value.error().message()};
      feeds.emplace_back(inputs[k]->name(), std::move(value).value());
    }
    auto results = (*session)->run(feeds);
    if (!results.ok()) return {"FAIL", "run: " + results.error().message()};
    for (size_t k = 0; k < outputs.size(); ++k) {
      auto expected = read_value(set / fmt::format("output_{}.pb", k), outputs[k]->type());
      if (!expected.ok()) return {"FAIL", "expected output: " + expected.error().message()};
      std::string diff = compare_values(*expected, (*results)[k]);
      if (!diff.empty()) return {"FAIL", fmt::format("{}: output '{}': {}", set.filename().string(), outputs[k]->name(), diff)};
    }
  }
  return {"PASS", ""};
}

// Runs a folder in a child process; a crash or timeout becomes a FAIL.
Outcome run_isolated(const fs::path& folder, int timeout_seconds) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {"FAIL", "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    alarm(static_cast<unsigned>(timeout_seconds));
    Outcome o = run_folder(folder);
    std::string line = o.status + "\t" + flatten(o.reason);
    (void)!write(pipe_fds[1], line.data(), line.size());
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string line;
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) line.append(buffer, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return {"FAIL", sig == SIGALRM ? fmt::format("timeout after {} s", timeout_seconds)
                                   : fmt::format("CRASH: signal {} ({})", sig, strsignal(sig))};
  }
  size_t tab = line.find('\t');
  if (tab == std::string::npos) return {"FAIL", "CRASH: the child reported nothing"};
  return {line.substr(0, tab), line.substr(tab + 1)};
}

struct ExpectedFailures {
  std::string header;                          // the leading comment lines, kept by --update
  std::map<std::string, std::string> reasons;  // folder name -> why it fails
};

ExpectedFailures read_expected(const fs::path& file) {
  ExpectedFailures expected;
  std::ifstream in(file);
  std::string line;
  bool leading = true;
  while (std::getline(in, line)) {
    if (leading && line.starts_with("#")) expected.header += line + "\n";
    leading = leading && line.starts_with("#");
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.find_first_of(" \t");
    std::string name = line.substr(0, space);
    std::string reason = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
    expected.reasons[name] = reason;
  }
  return expected;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: conformance DATA_DIR EXPECTED_FAILURES [--filter TEXT] [--update] [--timeout S]\n");
    return 2;
  }
  fs::path data = argv[1], expected_file = argv[2];
  std::string filter;
  bool update = false;
  int timeout = 120;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--update") update = true;
    else if (a == "--timeout" && i + 1 < argc) timeout = std::stoi(argv[++i]);
  }
  std::error_code ec;
  if (!fs::is_directory(data, ec)) {
    // The generated data (build/onnx-node-data) exists only once its build
    // target (onnx_node_data) has run.
    fmt::print(stderr, "conformance: {} is not a folder of backend test data\n", data.string());
    return 2;
  }
  std::vector<fs::path> folders;
  for (const auto& e : fs::recursive_directory_iterator(data))
    if (e.path().filename() == "model.onnx") folders.push_back(e.path().parent_path());
  std::sort(folders.begin(), folders.end());

  ExpectedFailures expected_failures = read_expected(expected_file);
  const std::map<std::string, std::string>& expected = expected_failures.reasons;
  std::map<std::string, Outcome> outcomes;
  size_t passed = 0, failed = 0, unsupported = 0, crashed = 0;
  std::vector<std::string> surprises;
  for (const fs::path& folder : folders) {
    std::string name = folder.filename().string();
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    Outcome o = run_isolated(folder, timeout);
    outcomes[name] = o;
    if (o.status == "PASS") ++passed;
    else if (o.status == "UNSUPPORTED") ++unsupported;
    else ++failed;
    if (o.reason.starts_with("CRASH") || o.reason.starts_with("timeout")) ++crashed;
    fmt::print("{:<12}{}{}\n", o.status, name, o.reason.empty() ? "" : ": " + o.reason);
    bool listed = expected.count(name) != 0;
    // Expected outputs drawn at random are matched by chance now and then.
    bool random = listed && expected.at(name).starts_with("random:");
    if (o.status == "PASS" && listed && !random) surprises.push_back(name + " passes but is listed as an expected failure");
    if (o.status != "PASS" && !listed) surprises.push_back(name + " fails: " + o.reason);
  }
  fmt::print("\n{} folders: {} passed, {} failed, {} unsupported, {} crashed or timed out\n", outcomes.size(), passed, failed,
             unsupported, crashed);

  if (update) {
    std::ofstream out(expected_file);
    out << (!expected_failures.header.empty()
                ? expected_failures.header
                : "# Folders of ONNX's backend test data that the runtime does not pass, each with the\n"
                  "# reason. tests/runtime/conformance fails when one of them passes, or when a folder\n"
                  "# not listed here fails: update with `conformance DATA FILE --update`.\n"
                  "# A reason starting with 'random:' marks outputs drawn at random, which a run may match by chance.\n");
    // A reason written by hand (the why, not the symptom) is kept while the
    // folder still fails, and so are the entries that --filter did not run.
    std::map<std::string, std::string> lines;
    for (const auto& [name, reason] : expected)
      if (!outcomes.count(name) && !filter.empty()) lines[name] = reason;
    for (const auto& [name, o] : outcomes) {
      if (o.status == "PASS") continue;
      auto kept = expected.find(name);
      lines[name] = kept != expected.end() && !kept->second.empty()
                        ? kept->second
                        : (o.status == "UNSUPPORTED" ? "unsupported: " : "") + o.reason;
    }
    for (const auto& [name, reason] : lines) out << name << "  " << reason << "\n";
    fmt::print("wrote {}\n", expected_file.string());
    return crashed == 0 ? 0 : 1;
  }
  for (const std::string& s : surprises) fmt::print("UNEXPECTED  {}\n", s);
  if (crashed > 0) fmt::print("{} folders crashed or timed out\n", crashed);
  return surprises.empty() && crashed == 0 ? 0 : 1;
}
