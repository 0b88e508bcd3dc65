// libFuzzer target for everything that reads a model file: parsing,
// validation, IR import/export, statistics and the checker. External data
// resolves against a folder that does not exist, so no input reaches files.
//
// Build: cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DONNXKIT_FUZZ=ON
//        cmake --build build-fuzz --target load_model_fuzzer
// Run:   build-fuzz/fuzz/load_model_fuzzer -max_total_time=600 fuzz/work fuzz/seeds/load_model fuzz/corpus

#include <cstddef>
#include <cstdint>
#include <span>

#include "analysis/checker.h"
#include "io/model_file.h"
#include "ir/model.h"
#include "tools/info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxkit;
  auto loaded = io::parse_model(std::as_bytes(std::span(data, size)), "/nonexistent/onnxkit-fuzz", "fuzz");
  if (!loaded.ok()) return 0;
  analysis::check_model(loaded->proto, "/nonexistent/onnxkit-fuzz", {.full = true});
  auto model = ir::import_model(std::move(loaded->proto), loaded->external_data);
  if (!model.ok()) return 0;
  tools::model_info(**model, {.nodes = true});
  ir::export_model(**model);
  (*model)->graph().cleanup();
  (void)(*model)->graph().toposort();
  return 0;
}
