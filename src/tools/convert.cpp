#include "tools/convert.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "io/atomic_file.h"
#include "ir/model.h"
#include "runtime/session.h"
#include "tools/runnable_inputs.h"

namespace onnxkit::tools {
namespace {

std::shared_ptr<const ir::Model> borrow(const ir::Model& model) {
  return std::shared_ptr<const ir::Model>(std::shared_ptr<const ir::Model>{}, &model);
}

double element(const runtime::Tensor& t, int64_t i) {
  using runtime::DataType;
  switch (t.dtype()) {
    case DataType::float32: return t.data<float>()[i];
    case DataType::float64: return t.data<double>()[i];
    case DataType::float16: return static_cast<float>(t.data<runtime::Float16>()[i]);
    default: return static_cast<float>(t.data<runtime::BFloat16>()[i]);
  }
}

// A float32 feed as the lowered model's input wants it.
runtime::Tensor narrowed(const runtime::Tensor& x, runtime::DataType type) {
  runtime::Tensor y(type, x.shape());
  const float* in = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (type == runtime::DataType::float16) y.mutable_data<runtime::Float16>()[i] = runtime::Float16(in[i]);
    else y.mutable_data<runtime::BFloat16>()[i] = runtime::BFloat16(in[i]);
  }
  return y;
}

// Compares one output of the lowered model with the float32 model's.
Status compare_output(const std::string& name, const runtime::Datum& expected, const runtime::Datum& actual, LowFloat type,
                      PrecisionCheck& check) {
  if (!expected.is_tensor() || !actual.is_tensor()) return {};
  const runtime::Tensor &e = expected.tensor(), &a = actual.tensor();
  if (e.shape() != a.shape())
    return make_error("output '{}' has shape {} after the conversion, {} before", name, runtime::shape_to_string(a.shape()),
                      runtime::shape_to_string(e.shape()));
  if (!runtime::is_floating(e.dtype()) || !runtime::is_floating(a.dtype())) {
    if (e.dtype() == a.dtype() && e.dtype() != runtime::DataType::string)
      for (int64_t i = 0; i < e.numel(); ++i)
        check.differing_integers += std::memcmp(static_cast<const char*>(e.raw()) + i * runtime::element_size(e.dtype()),
                                                static_cast<const char*>(a.raw()) + i * runtime::element_size(e.dtype()),
                                                runtime::element_size(e.dtype())) != 0;
    return {};
  }
  double largest = 0, diff = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double x = element(e, i), y = element(a, i);
    if (std::isfinite(x) && !std::isfinite(y))
      return make_error(
          "output '{}' is {} at element {} where the float32 model gives {:g}: {} overflows; keep the ops "
          "that overflow in float32 with --keep-op OP, or try --dtype bf16",
          name, y, i, x, to_string(type));
    if (!std::isfinite(x)) continue;
    largest = std::max(largest, std::fabs(x));
    diff = std::max(diff, std::fabs(x - y));
  }
  const double relative = largest > 0 ? diff / largest : diff;
  check.max_abs_diff = std::max(check.max_abs_diff, diff);
  if (check.worst_output.empty() || relative > check.max_rel_diff) {
    check.max_rel_diff = relative;
    check.worst_output = name;
  }
  return {};
}

}  // namespace

Result<ConvertReport> convert_model(const std::filesystem::path& in, const std::filesystem::path& out,
                                    const ConvertOptions& options, const ProgressFn& progress_fn) {
  ONNXKIT_TRY(io::check_writable(out));
  Progress progress(progress_fn);
  std::error_code ec;
  progress.size_up(std::filesystem::file_size(in, ec), 0);
  progress.step("reading the model");
  ONNXKIT_ASSIGN(auto model, ir::load_model(in));
  progress.size_up(model->file_size(), model->graph().nodes().size());
  ConvertReport report;
  if (options.precision) {
    std::optional<RunnableInputs> reference;
    if (options.check) {
      progress.step("running the float32 model");
      ONNXKIT_ASSIGN(auto session, runtime::Session::create(borrow(*model)));
      RunnableInputOptions search;
      search.inputs = options.check_inputs;
      auto found = find_runnable_inputs(*session, search);
      if (!found.ok())
        return make_error(
            "the float32 model does not run on the check's inputs: {}; give inputs with --input "
            "NAME=FILE or skip the check with --no-check",
            found.error().message());
      reference = std::move(*found);
    }
    progress.step(fmt::format("converting to {}", to_string(options.precision->type)));
    ONNXKIT_ASSIGN(report.precision, lower_float_precision(*model, *options.precision));
    if (reference) {
      progress.step(fmt::format("running the {} model", to_string(options.precision->type)));
      auto session = runtime::Session::create(borrow(*model));
      if (!session.ok()) return session.error().in(fmt::format("the {} model", to_string(options.precision->type)));
      PrecisionCheck check;
      check.chosen = reference->chosen;
      for (size_t run = 0; run < reference->feeds.size(); ++run) {
        runtime::NamedValues feeds = reference->feeds[run];
        for (auto& [name, value] : feeds)
          for (const runtime::ValueInfo& input : (*session)->inputs())
            if (input.name == name && value.is_tensor() && value.tensor().dtype() == runtime::DataType::float32 &&
                input.type.tensor_type().elem_type() != onnx::TensorProto::FLOAT)
              value =
                  runtime::Datum(narrowed(value.tensor(), static_cast<runtime::DataType>(input.type.tensor_type().elem_type())));
        auto outputs = (*session)->run(feeds);
        if (!outputs.ok())
          return make_error("the {} model fails to run ({}); nothing written", to_string(options.precision->type),
                            outputs.error().message());
        for (size_t i = 0; i < outputs->size() && i < reference->outputs[run].size(); ++i) {
          Status compared = compare_output((*session)->outputs()[i].name, reference->outputs[run][i], (*outputs)[i],
                                           options.precision->type, check);
          if (!compared.ok()) return make_error("{}; nothing written", compared.error().message());
        }
      }
      if (options.max_rel_diff && check.max_rel_diff > *options.max_rel_diff)
        return make_error(
            "output '{}' of the {} model is off by {:.3g} of its largest value (max abs diff {:.3g}), "
            "more than {:g}; nothing written. Keep the ops that lose it in float32 with --keep-op OP, "
            "or allow more with --max-rel-diff",
            check.worst_output, to_string(options.precision->type), check.max_rel_diff, check.max_abs_diff,
            *options.max_rel_diff);
      report.check = check;
    }
  }
  progress.step("writing");
  ONNXKIT_ASSIGN(report.saved, ir::save_model(*model, out, options.save));
  return report;
}

// A loss worth a warning: beyond what float16's rounding costs a typical
// classifier or encoder (their outputs stay within 1e-2 of float32's).
constexpr double kNotableLoss = 0.05;

std::string render_precision_text(const ConvertReport& report, LowFloat type) {
  if (!report.precision) return "";
  const PrecisionReport& p = *report.precision;
  std::string text =
      fmt::format("{} tensors to {}, {} Cast node{} added", p.tensors, to_string(type), p.casts, p.casts == 1 ? "" : "s");
  if (p.saturated > 0)
    text += fmt::format("; {} weight{} beyond float16's range set to +-65504", p.saturated, p.saturated == 1 ? "" : "s");
  text += "\n";
  for (const auto& [op, kept] : p.kept)
    text += fmt::format("kept in float32: {} {} node{} ({})\n", kept.first, op, kept.first == 1 ? "" : "s", kept.second);
  if (report.check) {
    const PrecisionCheck& c = *report.check;
    text += fmt::format("checked against the float32 model: max abs diff {:.3g}, {:.3g} of the largest value of '{}'",
                        c.max_abs_diff, c.max_rel_diff, c.worst_output);
    if (c.differing_integers > 0) text += fmt::format("; {} integer output elements differ", c.differing_integers);
    text += "\n";
    if (c.max_rel_diff > kNotableLoss)
      text += fmt::format(
          "warning: that is more than {:g}: check the model on real data, or keep the ops that lose "
          "most in float32 with --keep-op OP (compare A.onnx B.onnx shows where it grows)\n",
          kNotableLoss);
    if (!c.chosen.empty()) text += fmt::format("check inputs: {}\n", c.chosen);
  } else {
    text += "not checked (--no-check)\n";
  }
  return text;
}

}  // namespace onnxkit::tools
