// eliminate-duplicate-initializers: initializers with equal type, shape and
// bytes become one; readers of the others read the first (in file order).
//
// Before:  w1 = [1, 2, 3]   w2 = [1, 2, 3]   a = Add(x, w1)   b = Mul(y, w2)
// After:   w1 = [1, 2, 3]                    a = Add(x, w1)   b = Mul(y, w1)
//
// Only within one graph; initializers that are also graph inputs (defaults
// a caller may override) are left alone, and so are string tensors. A
// duplicate that is a graph output keeps its name (see replace_value).

#include <fmt/format.h>

#include <cstring>
#include <string_view>
#include <unordered_map>

#include "passes/eliminate/eliminate_common.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::passes::eliminate {
namespace {

struct Constant {
  ir::Value* value;
  runtime::Tensor data;
};

// The initializer's data where it lies (raw_data in place, external data
// mapped): the buckets hold every initializer at once, and copies would
// double the model's memory. The views stay valid through the pass, which
// redirects readers but neither replaces nor drops an initializer.
std::optional<runtime::Tensor> view_constant(const ir::Value& value, const PassContext& context) {
  if (value.initializer() == nullptr || value.is_graph_input()) return std::nullopt;
  const std::shared_ptr<const void> borrowed(std::shared_ptr<const void>{}, value.initializer());
  auto tensor = runtime::tensor_from_proto(*value.initializer(), context.model().external_data(), borrowed);
  if (!tensor.ok()) return std::nullopt;
  return std::move(tensor).value();
}

bool same_data(const runtime::Tensor& a, const runtime::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

class EliminateDuplicateInitializers final : public Pass {
 public:
  std::string_view name() const override { return "eliminate-duplicate-initializers"; }
  std::string_view summary() const override { return "merge initializers holding the same tensor"; }

  size_t run(ir::Graph& graph, PassContext& context) const override {
    // Bucketed by a hash of the bytes; equal hashes are compared in full.
    std::unordered_map<size_t, std::vector<Constant>> seen;
    size_t changes = 0;
    const std::vector<ir::Value*> initializers = graph.initializers();  // replace_value may rename
    for (ir::Value* value : initializers) {
      if (!value->is_used()) continue;  // cleanup's job
      auto data = view_constant(*value, context);
      if (!data || data->dtype() == runtime::DataType::string) continue;
      const std::string_view bytes(static_cast<const char*>(data->raw()), data->nbytes());
      const size_t key = std::hash<std::string_view>{}(bytes) ^ (static_cast<size_t>(data->dtype()) << 1) ^ (data->rank() << 8);
      std::vector<Constant>& bucket = seen[key];
      const Constant* twin = nullptr;
      for (const Constant& earlier : bucket)
        if (same_data(earlier.data, *data)) twin = &earlier;
      if (twin == nullptr) {
        bucket.push_back({value, std::move(*data)});
        continue;
      }
      std::string name = value->name();
      if (!replace_value(graph, value, twin->value)) continue;
      context.note(fmt::format("initializer '{}' is a copy of '{}'", name, twin->value->name()));
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_duplicate_initializers() { return std::make_unique<EliminateDuplicateInitializers>(); }

}  // namespace onnxkit::passes::eliminate
