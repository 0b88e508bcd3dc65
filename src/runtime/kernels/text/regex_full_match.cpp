// RegexFullMatch (opset 20): whether each string matches the pattern as a
// whole, in RE2's syntax, which the spec names. RE2 (Debian's libre2) runs in
// time linear in the input whatever the pattern, so a model's pattern cannot
// make a run hang as a backtracking engine's could.

#include <re2/re2.h>

#include <memory>

#include "runtime/kernels/text/text.h"

namespace onnxkit::runtime::text {
namespace {

KernelFactory regex_full_match_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    if (!info.has_attr("pattern")) return make_error("attribute 'pattern' is required");
    RE2::Options options;
    options.set_log_errors(false);
    auto regex = std::make_shared<const RE2>(info.attr_string("pattern", ""), options);
    if (!regex->ok()) return make_error("attribute 'pattern' is not a valid RE2 pattern: {}", regex->error());
    return ComputeFn([regex](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->dtype() != DataType::string) return make_error("input X must be a string tensor, got {}", to_string(x->dtype()));
      Tensor& y = ctx.output(0, DataType::boolean, x->shape());
      const std::string* in = x->data<std::string>();
      bool* out = y.mutable_data<bool>();
      for (int64_t i = 0; i < x->numel(); ++i) out[i] = RE2::FullMatch(in[i], *regex);
      return {};
    });
  });
}

}  // namespace

void register_regex_full_match(KernelRegistry& r) { r.add("", "RegexFullMatch", 20, kLatestOpset, regex_full_match_kernel()); }

}  // namespace onnxkit::runtime::text
