// libFuzzer target for `run`: small models (up to 16 KiB; the size budget)
// are loaded, planned and run once on random inputs, one thread, with a
// budget of elements, sub-graph runs and time, as a user would with
// `run --random --timeout`. Inputs with symbolic dims take 2 for each.
//
// Build and run: see the README's fuzzing line; seeds in fuzz/seeds/run_model.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "io/model_file.h"
#include "ir/model.h"
#include "runtime/session.h"
#include "tools/inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxkit;
  constexpr size_t kMaxModelBytes = 16 * 1024;
  constexpr int64_t kMaxInputElements = 1 << 16;
  if (size > kMaxModelBytes) return 0;
  auto loaded = io::parse_model(std::as_bytes(std::span(data, size)), "/nonexistent/onnxkit-fuzz", "fuzz");
  if (!loaded.ok()) return 0;
  auto imported = ir::import_model(std::move(loaded->proto), loaded->external_data);
  if (!imported.ok()) return 0;
  std::shared_ptr<const ir::Model> model(std::move(imported).value());
  runtime::SessionOptions options;
  options.threads = 1;
  options.adapt_to_load = false;
  auto session = runtime::Session::create(model, options);
  if (!session.ok()) return 0;
  tools::InputOptions inputs;
  inputs.random = true;
  for (const runtime::ValueInfo& in : (*session)->inputs()) {
    if (!in.type.has_tensor_type() || !in.type.tensor_type().has_shape()) continue;
    std::vector<int64_t> dims;
    int64_t elements = 1;
    for (const auto& d : in.type.tensor_type().shape().dim()) {
      dims.push_back(d.has_dim_value() ? d.dim_value() : 2);
      if (dims.back() < 0 || dims.back() > kMaxInputElements) return 0;
      elements *= std::max<int64_t>(dims.back(), 1);
      if (elements > kMaxInputElements) return 0;  // the inputs are made before the run's budget counts
    }
    inputs.shapes.emplace_back(in.name, dims);
  }
  auto feeds = tools::prepare_inputs(**session, inputs);
  if (!feeds.ok()) return 0;
  runtime::RunLimits limits;
  limits.timeout = std::chrono::seconds(1);
  limits.max_elements = 1 << 24;
  limits.max_subgraph_runs = 1000;
  (void)(*session)->run(*feeds, limits);
  return 0;
}
