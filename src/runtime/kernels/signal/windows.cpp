// HannWindow, HammingWindow and BlackmanWindow: generalized cosine windows
//   w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),  n < size,
// with N = size when periodic (the first size points of a window of size + 1)
// and N = size - 1 when symmetric.

#include <cmath>
#include <numbers>

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime::signal {
namespace {

struct CosineWindow {
  double a0, a1, a2;
};

// Hann is sin^2(pi n / N) written as a cosine sum. Hamming takes the ONNX
// spec's alpha = 25/46 and beta = 21/46 (Hamming's exact values), not the
// rounded 0.54 / 0.46 of numpy.hamming.
constexpr CosineWindow kHann{0.5, 0.5, 0};
constexpr CosineWindow kHamming{25.0 / 46.0, 21.0 / 46.0, 0};
constexpr CosineWindow kBlackman{0.42, 0.5, 0.08};

std::vector<double> cosine_window(const CosineWindow& c, int64_t size, bool periodic) {
  const int64_t period = periodic ? size : size - 1;
  // A symmetric window of one point has no period: 1, as numpy and torch give.
  if (period == 0) return {1.0};
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    const double angle = 2 * std::numbers::pi * static_cast<double>(n) / static_cast<double>(period);
    w[static_cast<size_t>(n)] = c.a0 - c.a1 * std::cos(angle) + c.a2 * std::cos(2 * angle);
  }
  return w;
}

KernelFactory window_kernel(CosineWindow coefficients) {
  return make_kernel([coefficients](const KernelInfo& info) -> Result<ComputeFn> {
    const auto type = static_cast<DataType>(info.attr_int("output_datatype", static_cast<int64_t>(DataType::float32)));
    ONNXKIT_TRY(check_numeric_output(type));
    const bool periodic = info.attr_int("periodic", 1) != 0;
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(int64_t size, read_int_scalar(ctx, 0, "size"));
      if (size <= 0 || size > kMaxAttributeValue) return make_error("size must be in [1, {}], got {}", kMaxAttributeValue, size);
      write_numbers(cosine_window(coefficients, size, periodic), ctx.output(0, type, {size}));
      return {};
    });
  });
}

}  // namespace

void register_windows(KernelRegistry& r) {
  r.add("", "HannWindow", 17, kLatestOpset, window_kernel(kHann));
  r.add("", "HammingWindow", 17, kLatestOpset, window_kernel(kHamming));
  r.add("", "BlackmanWindow", 17, kLatestOpset, window_kernel(kBlackman));
}

}  // namespace onnxkit::runtime::signal
