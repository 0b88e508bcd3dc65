#pragma once
// What flows along the runtime's edges: a tensor, a sequence of tensors (or
// of maps), a map, or an optional that may hold a tensor or a sequence (or
// nothing). A Datum is data; the edge it flows along is an ir::Value.

#include <memory>
#include <variant>
#include <vector>

#include "runtime/tensor.h"

namespace onnxkit::runtime {

// A map of ai.onnx.ml (ZipMap's rows, DictVectorizer's and CastMap's
// input): `keys` (int64 or string) and `values`, 1-D tensors of one length,
// key i mapping to value i.
struct Map {
  Tensor keys;
  Tensor values;
};

struct Sequence {
  DataType elem_type = DataType::undefined;  // known even when empty; a map's value type for `of_maps`
  std::vector<Tensor> items;
  // A sequence of maps (ZipMap's output) holds them in `maps`, `items` empty.
  bool of_maps = false;
  std::vector<Map> maps;
};

class Datum;

// An optional value: `value` is null when the optional is empty. Its type is
// kept so an empty optional still says what it would hold.
struct Optional {
  std::shared_ptr<const Datum> value;
  bool is_sequence = false;
  DataType elem_type = DataType::undefined;
};

class Datum {
 public:
  Datum() = default;                       // nothing: an omitted optional input or output
  Datum(Tensor t) : v_(std::move(t)) {}    // NOLINT: implicit by design
  Datum(Sequence s) : v_(std::move(s)) {}  // NOLINT
  Datum(Optional o) : v_(std::move(o)) {}  // NOLINT
  Datum(Map m) : v_(std::move(m)) {}       // NOLINT

  bool empty() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_sequence() const { return std::holds_alternative<Sequence>(v_); }
  bool is_optional() const { return std::holds_alternative<Optional>(v_); }
  bool is_map() const { return std::holds_alternative<Map>(v_); }

  const Tensor& tensor() const { return std::get<Tensor>(v_); }
  Tensor& tensor() { return std::get<Tensor>(v_); }
  const Sequence& sequence() const { return std::get<Sequence>(v_); }
  Sequence& sequence() { return std::get<Sequence>(v_); }
  const Optional& optional() const { return std::get<Optional>(v_); }
  const Map& map() const { return std::get<Map>(v_); }

  // "float32[1,3,224,224]", "seq(float32)", "map(string,float32) of 3",
  // "optional(...)", "none".
  std::string describe() const;

 private:
  std::variant<std::monostate, Tensor, Sequence, Optional, Map> v_;
};

}  // namespace onnxkit::runtime
