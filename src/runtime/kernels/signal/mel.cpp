// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters on
// the mel scale mel(f) = 2595 log10(1 + f / 700), as ONNX's reference
// implementation builds them (the backend data comes from it):
//   - num_mel_bins + 2 edges, lower_mel + k * step with
//     step = (upper_mel - lower_mel) / (num_mel_bins + 2), so the last edge
//     stays one step below upper_edge_hertz;
//   - each edge goes to spectrogram bin floor((dft_length + 1) * hertz / sample_rate);
//   - filter m rises linearly from 0 at bin edge[m] to 1 at edge[m + 1] and
//     falls back towards 0 just before edge[m + 2] (a rise of zero width is a 1).

#include <cmath>

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime::signal {
namespace {

enum MelInput : size_t { kNumMelBins = 0, kDftLength, kSampleRate, kLowerEdge, kUpperEdge };

double hertz_to_mel(double hertz) { return 2595 * std::log10(1 + hertz / 700); }
double mel_to_hertz(double mel) { return 700 * (std::pow(10.0, mel / 2595) - 1); }

Status mel_weight_matrix(KernelContext& ctx, DataType type) {
  ONNXKIT_ASSIGN(const int64_t num_mel_bins, read_int_scalar(ctx, kNumMelBins, "num_mel_bins"));
  ONNXKIT_ASSIGN(const int64_t dft_length, read_int_scalar(ctx, kDftLength, "dft_length"));
  ONNXKIT_ASSIGN(const int64_t sample_rate, read_int_scalar(ctx, kSampleRate, "sample_rate"));
  ONNXKIT_ASSIGN(const double lower_hertz, read_float_scalar(ctx, kLowerEdge, "lower_edge_hertz"));
  ONNXKIT_ASSIGN(const double upper_hertz, read_float_scalar(ctx, kUpperEdge, "upper_edge_hertz"));
  if (num_mel_bins <= 0 || num_mel_bins > kMaxAttributeValue)
    return make_error("num_mel_bins must be in [1, {}], got {}", kMaxAttributeValue, num_mel_bins);
  if (dft_length <= 0 || dft_length > kMaxAttributeValue)
    return make_error("dft_length must be in [1, {}], got {}", kMaxAttributeValue, dft_length);
  if (sample_rate <= 0) return make_error("sample_rate must be positive, got {}", sample_rate);
  if (!(lower_hertz >= 0 && lower_hertz < upper_hertz))
    return make_error("need 0 <= lower_edge_hertz < upper_edge_hertz, got {} and {}", lower_hertz, upper_hertz);

  const int64_t spectrogram_bins = dft_length / 2 + 1;
  const double lower_mel = hertz_to_mel(lower_hertz);
  const double step = (hertz_to_mel(upper_hertz) - lower_mel) / static_cast<double>(num_mel_bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(num_mel_bins) + 2);
  for (size_t k = 0; k < edge.size(); ++k) {
    const double hertz = mel_to_hertz(lower_mel + static_cast<double>(k) * step);
    const double bin = std::floor(static_cast<double>(dft_length + 1) * hertz / static_cast<double>(sample_rate));
    // Filters write rows up to their peak and before their end: only the
    // very last edge may be one past the last row. (bin >= 0 holds since
    // lower_edge_hertz >= 0; checked all the same as it indexes the rows.)
    const bool last = k + 1 == edge.size();
    if (!(bin >= 0 && bin <= static_cast<double>(last ? spectrogram_bins : spectrogram_bins - 1)))
      return make_error(
          "upper_edge_hertz {} reaches past the {} spectrogram bins of dft_length {}; keep it below "
          "sample_rate / 2 = {}",
          upper_hertz, spectrogram_bins, dft_length, static_cast<double>(sample_rate) / 2);
    edge[k] = static_cast<int64_t>(bin);
  }

  const Shape out_shape{spectrogram_bins, num_mel_bins};
  ONNXKIT_ASSIGN(const int64_t out_count, checked_size(out_shape, "output"));
  std::vector<double> weights(static_cast<size_t>(out_count), 0.0);
  for (int64_t m = 0; m < num_mel_bins; ++m) {
    const int64_t left = edge[static_cast<size_t>(m)], peak = edge[static_cast<size_t>(m) + 1],
                  right = edge[static_cast<size_t>(m) + 2];
    auto weight = [&](int64_t row) -> double& { return weights[static_cast<size_t>(row * num_mel_bins + m)]; };
    for (int64_t row = left; row <= peak; ++row)
      weight(row) = peak == left ? 1.0 : static_cast<double>(row - left) / static_cast<double>(peak - left);
    for (int64_t row = peak; row < right; ++row)
      weight(row) = static_cast<double>(right - row) / static_cast<double>(right - peak);
  }
  write_numbers(weights, ctx.output(0, type, out_shape));
  return {};
}

}  // namespace

void register_mel(KernelRegistry& r) {
  r.add("", "MelWeightMatrix", 17, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          const auto type = static_cast<DataType>(info.attr_int("output_datatype", static_cast<int64_t>(DataType::float32)));
          ONNXKIT_TRY(check_numeric_output(type));
          return ComputeFn([type](KernelContext& ctx) { return mel_weight_matrix(ctx, type); });
        }));
}

}  // namespace onnxkit::runtime::signal
