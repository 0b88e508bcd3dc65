// ZipMap: each row of class scores becomes a map from class label to score,
// the form scikit-learn's predict_proba takes in skl2onnx's models.

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime::ml {
namespace {

Result<ComputeFn> build_zipmap(const KernelInfo& info) {
  std::vector<int64_t> ints = info.attr_ints("classlabels_int64s");
  std::vector<std::string> strings = info.attr_strings("classlabels_strings");
  if (ints.empty() == strings.empty())
    return make_error("exactly one of classlabels_int64s and classlabels_strings must be given");
  // One keys tensor, shared by every map of every run.
  const Tensor keys = strings.empty() ? Tensor::from<int64_t>({static_cast<int64_t>(ints.size())}, ints)
                                      : Tensor::from<std::string>({static_cast<int64_t>(strings.size())}, strings);
  return ComputeFn([keys](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->dtype() != DataType::float32) return make_error("input X is {}; float expected", to_string(x->dtype()));
    ONNXKIT_ASSIGN(Rows rows, rows_of(*x));
    if (rows.c != keys.numel()) return make_error("input X has {} columns for {} class labels", rows.c, keys.numel());
    Sequence out;
    out.elem_type = DataType::float32;
    out.of_maps = true;
    out.maps.reserve(static_cast<size_t>(rows.n));
    for (int64_t i = 0; i < rows.n; ++i) {
      // A copy: X's buffer may be reused once this step is done.
      out.maps.push_back(Map{keys, x->part(i * rows.c, {rows.c}).clone()});
    }
    ctx.set_output(0, Datum(std::move(out)));
    return {};
  });
}

}  // namespace

void register_zipmap(KernelRegistry& r) { r.add(std::string(kDomain), "ZipMap", 1, kLatestOpset, make_kernel(build_zipmap)); }

}  // namespace onnxkit::runtime::ml
