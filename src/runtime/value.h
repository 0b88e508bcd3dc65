#pragma once
// What flows along the runtime's edges: a tensor, a sequence of tensors, or
// an optional that may hold either (or nothing).

#include <memory>
#include <variant>
#include <vector>

#include "runtime/tensor.h"

namespace onnxkit::runtime {

struct Sequence {
  DataType elem_type = DataType::undefined;  // known even when empty
  std::vector<Tensor> items;
};

class Value;

// An optional value: `value` is null when the optional is empty. Its type is
// kept so an empty optional still says what it would hold.
struct Optional {
  std::shared_ptr<const Value> value;
  bool is_sequence = false;
  DataType elem_type = DataType::undefined;
};

class Value {
 public:
  Value() = default;  // nothing: an omitted optional input or output
  Value(Tensor t) : v_(std::move(t)) {}  // NOLINT: implicit by design
  Value(Sequence s) : v_(std::move(s)) {}  // NOLINT
  Value(Optional o) : v_(std::move(o)) {}  // NOLINT

  bool empty() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_sequence() const { return std::holds_alternative<Sequence>(v_); }
  bool is_optional() const { return std::holds_alternative<Optional>(v_); }

  const Tensor& tensor() const { return std::get<Tensor>(v_); }
  Tensor& tensor() { return std::get<Tensor>(v_); }
  const Sequence& sequence() const { return std::get<Sequence>(v_); }
  Sequence& sequence() { return std::get<Sequence>(v_); }
  const Optional& optional() const { return std::get<Optional>(v_); }

  // "float32[1,3,224,224]", "seq(float32)", "optional(...)", "none".
  std::string describe() const;

 private:
  std::variant<std::monostate, Tensor, Sequence, Optional> v_;
};

}  // namespace onnxkit::runtime
