// Every registered kernel is tested: each (domain, op, opset range) of the
// registry must have a folder of ONNX's backend test data that runs one of
// its nodes at an opset of the range and that the runtime passes (one not
// in expected_failures.txt), or a hand test in tests/runtime naming the op
// ("Op" in quotes), or a line in kernel_coverage_exclusions.txt giving the
// reason. Nothing runs: it reads the backend models' nodes and the test
// sources, so it takes a second or two.
//
// A new kernel with a backend folder (or a hand test) needs no edit here;
// the exclusions list only the gaps.
//
// usage: kernel_coverage DATA_DIR EXPECTED_FAILURES HAND_TEST_DIR EXCLUSIONS

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace fs = std::filesystem;
using onnxkit::runtime::KernelDef;

namespace {

// "domain:Op", or "Op" in the default domain.
std::string op_name(std::string_view domain, std::string_view op_type) {
  domain = onnxkit::ir::canonical_domain(domain);
  return domain.empty() ? std::string(op_type) : fmt::format("{}:{}", domain, op_type);
}

// The first word of each line that is not blank or a comment, with the rest
// of the line (the reason).
std::map<std::string, std::string> read_listed(const fs::path& file) {
  std::map<std::string, std::string> listed;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find_first_of(" \t");
    const size_t reason = space == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", space);
    listed[line.substr(0, space)] = reason == std::string::npos ? "" : line.substr(reason);
  }
  return listed;
}

// Op name -> the opsets its nodes run at, over a graph and its sub-graphs.
using OpsetsByOp = std::map<std::string, std::set<int64_t>>;

void collect_nodes(const onnx::GraphProto& graph, const std::map<std::string, int64_t>& opsets, OpsetsByOp& seen) {
  for (const onnx::NodeProto& node : graph.node()) {
    auto opset = opsets.find(std::string(onnxkit::ir::canonical_domain(node.domain())));
    if (opset != opsets.end()) seen[op_name(node.domain(), node.op_type())].insert(opset->second);
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) collect_nodes(a.g(), opsets, seen);
      for (const onnx::GraphProto& g : a.graphs()) collect_nodes(g, opsets, seen);
    }
  }
}

// The ops (with opsets) of the backend folders under `data` the runtime
// passes: all but the `failing` ones.
OpsetsByOp backend_ops(const fs::path& data, const std::map<std::string, std::string>& failing, size_t& folders) {
  OpsetsByOp seen;
  for (const auto& e : fs::recursive_directory_iterator(data)) {
    if (e.path().filename() != "model.onnx" || failing.count(e.path().parent_path().filename().string())) continue;
    std::ifstream in(e.path(), std::ios::binary);
    onnx::ModelProto model;
    if (!model.ParseFromIstream(&in)) {
      fmt::print(stderr, "{}: not a model\n", e.path().string());
      continue;
    }
    std::map<std::string, int64_t> opsets;
    for (const auto& o : model.opset_import()) opsets[std::string(onnxkit::ir::canonical_domain(o.domain()))] = o.version();
    collect_nodes(model.graph(), opsets, seen);
    ++folders;
  }
  return seen;
}

// The text of every hand test of the runtime (C++ and Python).
std::string hand_tests(const fs::path& dir) {
  std::string all;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const bool python_test = name.starts_with("test_") && name.ends_with(".py");  // e.g. test_ml.py, on trained models
    if (!name.ends_with("_test.cpp") && !python_test) continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    all += text.str();
  }
  return all;
}

std::string range_text(const KernelDef& def) {
  return def.until == onnxkit::runtime::kLatestOpset ? fmt::format("opset {}+", def.since)
                                                     : fmt::format("opsets {}-{}", def.since, def.until);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: kernel_coverage DATA_DIR EXPECTED_FAILURES HAND_TEST_DIR EXCLUSIONS\n");
    return 2;
  }
  size_t folders = 0;
  const OpsetsByOp backend = backend_ops(argv[1], read_listed(argv[2]), folders);
  const std::string tests = hand_tests(argv[3]);
  const std::map<std::string, std::string> excluded = read_listed(argv[4]);
  if (folders == 0) {
    fmt::print(stderr, "no backend test folders under {}\n", argv[1]);
    return 1;
  }

  std::vector<std::string> gaps;
  std::set<std::string> registered;
  size_t by_backend = 0, by_hand = 0, by_exclusion = 0;
  for (const KernelDef& def : onnxkit::runtime::KernelRegistry::builtin().all()) {
    const std::string op = op_name(def.domain, def.op_type);
    registered.insert(op);
    auto seen = backend.find(op);
    if (seen != backend.end() && seen->second.lower_bound(def.since) != seen->second.end() &&
        *seen->second.lower_bound(def.since) <= def.until) {
      ++by_backend;
    } else if (tests.find(fmt::format("\"{}\"", def.op_type)) != std::string::npos) {
      ++by_hand;
    } else if (excluded.count(op)) {
      ++by_exclusion;
    } else {
      gaps.push_back(fmt::format("{} ({}): no passing backend folder, no hand test naming \"{}\", no exclusion", op,
                                 range_text(def), def.op_type));
    }
  }
  for (const auto& [op, reason] : excluded) {
    if (!registered.count(op)) gaps.push_back(fmt::format("{} is excluded but has no kernel", op));
    if (reason.empty()) gaps.push_back(fmt::format("{} is excluded without a reason", op));
  }
  fmt::print("{} backend folders read; kernels covered: {} by backend data, {} by hand tests, {} excluded\n", folders, by_backend,
             by_hand, by_exclusion);
  for (const std::string& gap : gaps) fmt::print("{}\n", gap);
  return gaps.empty() ? 0 : 1;
}
