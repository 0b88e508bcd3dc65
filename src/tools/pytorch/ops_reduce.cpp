// Reductions, ArgMax/ArgMin and CumSum. Reduce axes are an attribute up to
// opset 17 (ReduceSum: 12) and an input after; empty axes reduce every dim
// unless noop_with_empty_axes.

#include <fmt/format.h>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {

struct Reduction {
  const char* op;
  // The expression over `x` reducing `dims` (a tuple) with keepdim `keep`.
  const char* format;
  int64_t axes_input_since;  // the opset from which axes is an input
};

Status reduce(Emit& e, const Reduction& r) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  bool keep = e.attr_int("keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes;
  if (e.opset < r.axes_input_since) {
    if (e.has_attr("axes")) axes = e.attr_ints("axes");
  } else if (e.has(1)) {
    axes = e.constant_ints(1);
    if (!axes) {
      ONNXKIT_ASSIGN(std::string list, e.ints(1));
      e.assign(0, fmt::format("{}({}, {}, {}, {}, {})", e.helper("onnx_reduce"), x, py_str(r.op), list, py_bool(keep),
                              py_bool(e.attr_int("noop_with_empty_axes", 0) != 0)));
      return {};
    }
  }
  if (axes && axes->empty()) axes.reset();
  if (!axes && e.attr_int("noop_with_empty_axes", 0) != 0 && e.opset >= r.axes_input_since) {
    e.assign(0, x);
    return {};
  }
  std::string dims;
  if (axes) {
    dims = py_tuple(*axes);
  } else if (auto rank = e.rank(0)) {
    std::vector<int64_t> all;
    for (int64_t d = 0; d < *rank; ++d) all.push_back(d);
    dims = py_tuple(all);
  } else {
    dims = fmt::format("tuple(range({}.dim()))", x);
  }
  if (dims == "()") {  // a scalar: reducing nothing, the value itself (as the functions below give)
    dims = "tuple(range(" + x + ".dim()))";
  }
  e.assign(0, fmt::format(fmt::runtime(r.format), fmt::arg("x", x), fmt::arg("dims", dims), fmt::arg("keep", py_bool(keep))));
  return {};
}

template <const Reduction& R> Status emit_reduce(Emit& e) { return reduce(e, R); }

constexpr Reduction kSum{"sum", "{x}.sum(dim={dims}, keepdim={keep})", 13};
constexpr Reduction kMean{"mean", "{x}.mean(dim={dims}, keepdim={keep})", 18};
constexpr Reduction kMax{"max", "{x}.amax(dim={dims}, keepdim={keep})", 18};
constexpr Reduction kMin{"min", "{x}.amin(dim={dims}, keepdim={keep})", 18};
constexpr Reduction kProd{"prod", "_onnx_prod({x}, {dims}, {keep})", 18};
constexpr Reduction kL1{"l1", "{x}.abs().sum(dim={dims}, keepdim={keep})", 18};
constexpr Reduction kL2{"l2", "{x}.square().sum(dim={dims}, keepdim={keep}).sqrt()", 18};
constexpr Reduction kLogSum{"log_sum", "{x}.sum(dim={dims}, keepdim={keep}).log()", 18};
constexpr Reduction kLogSumExp{"log_sum_exp", "torch.logsumexp({x}, dim={dims}, keepdim={keep})", 18};
constexpr Reduction kSumSquare{"sum_square", "{x}.square().sum(dim={dims}, keepdim={keep})", 18};

Status emit_reduce_prod(Emit& e) {
  e.helper("onnx_prod");
  return reduce(e, kProd);
}

Status arg_reduce(Emit& e, const char* function) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t axis = e.attr_int("axis", 0);
  std::string keep = py_bool(e.attr_int("keepdims", 1) != 0);
  if (e.attr_int("select_last_index", 0) != 0) {
    // The last of equal values: the first one on the flipped axis.
    e.assign(0, fmt::format("{x}.shape[{a}] - 1 - {x}.flip({a}).{f}(dim={a}, keepdim={k})", fmt::arg("x", x), fmt::arg("a", axis),
                            fmt::arg("f", function), fmt::arg("k", keep)));
    return {};
  }
  e.assign(0, fmt::format("{}.{}(dim={}, keepdim={})", x, function, axis, keep));
  return {};
}

Status emit_argmax(Emit& e) { return arg_reduce(e, "argmax"); }
Status emit_argmin(Emit& e) { return arg_reduce(e, "argmin"); }

Status emit_cumsum(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string axis, e.integer(1));
  bool exclusive = e.attr_int("exclusive", 0) != 0, reverse = e.attr_int("reverse", 0) != 0;
  std::string source = reverse ? fmt::format("{}.flip({})", x, axis) : x;
  std::string sum = fmt::format("torch.cumsum({}, {})", source, axis);
  if (exclusive) sum = fmt::format("({} - {})", sum, source);
  if (reverse) sum += fmt::format(".flip({})", axis);
  e.assign(0, sum);
  return {};
}

}  // namespace

void add_reduce_emitters(EmitterTable& t) {
  t.insert({
      {"ReduceSum", emit_reduce<kSum>},
      {"ReduceMean", emit_reduce<kMean>},
      {"ReduceMax", emit_reduce<kMax>},
      {"ReduceMin", emit_reduce<kMin>},
      {"ReduceProd", emit_reduce_prod},
      {"ReduceL1", emit_reduce<kL1>},
      {"ReduceL2", emit_reduce<kL2>},
      {"ReduceLogSum", emit_reduce<kLogSum>},
      {"ReduceLogSumExp", emit_reduce<kLogSumExp>},
      {"ReduceSumSquare", emit_reduce<kSumSquare>},
      {"ArgMax", emit_argmax},
      {"ArgMin", emit_argmin},
      {"CumSum", emit_cumsum},
  });
}

}  // namespace onnxkit::tools::pytorch
