#include "runtime/datum.h"

#include <fmt/format.h>

namespace onnxkit::runtime {

std::string Datum::describe() const {
  if (is_tensor()) return to_string(tensor().dtype()) + shape_to_string(tensor().shape());
  if (is_sequence() && sequence().of_maps) return fmt::format("seq(map) of {}", sequence().maps.size());
  if (is_sequence()) return fmt::format("seq({}) of {}", to_string(sequence().elem_type), sequence().items.size());
  if (is_map())
    return fmt::format("map({},{}) of {}", to_string(map().keys.dtype()), to_string(map().values.dtype()), map().keys.numel());
  if (is_optional()) {
    const Optional& o = optional();
    return o.value ? "optional(" + o.value->describe() + ")" : "optional(none)";
  }
  return "none";
}

}  // namespace onnxkit::runtime
