#include "passes/registry.h"

namespace onnxkit::passes {

void add_elimination_passes(std::vector<std::unique_ptr<Pass>>& passes) {
}

}  // namespace onnxkit::passes
