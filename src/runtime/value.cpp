#include "runtime/value.h"

#include <fmt/format.h>

namespace onnxkit::runtime {

std::string Value::describe() const {
  if (is_tensor()) return to_string(tensor().dtype()) + shape_to_string(tensor().shape());
  if (is_sequence()) return fmt::format("seq({}) of {}", to_string(sequence().elem_type), sequence().items.size());
  if (is_optional()) {
    const Optional& o = optional();
    return o.value ? "optional(" + o.value->describe() + ")" : "optional(none)";
  }
  return "none";
}

}  // namespace onnxkit::runtime
