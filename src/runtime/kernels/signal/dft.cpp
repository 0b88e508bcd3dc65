// DFT (opsets 17 and 20) and STFT (opset 17).
//
// DFT sees its input as [outer, axis_length, inner, components] (components:
// 1 real, 2 complex) and transforms each of the outer * inner lines along the
// axis, zero-padded or truncated to dft_length. Three kinds of result:
//   full DFT  (onesided=0):            axis dim dft_length,         last dim 2
//   RFFT      (onesided=1, inverse=0): axis dim dft_length / 2 + 1, last dim 2; real input only
//   IRFFT     (onesided=1, inverse=1): axis dim dft_length,         last dim 1; complex input only,
//                                      the one-sided half of a Hermitian spectrum
// The inverse transforms divide by dft_length.

#include <algorithm>

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime::signal {
namespace {

enum DftInput : size_t { kInput = 0, kDftLength, kAxis };
enum StftInput : size_t { kSignal = 0, kFrameStep, kWindow, kFrameLength };

struct DftMode {
  bool inverse = false;
  bool onesided = false;
};

DftMode read_dft_mode(const KernelInfo& info) { return {info.attr_int("inverse", 0) != 0, info.attr_int("onesided", 0) != 0}; }

bool is_real_or_complex(const Tensor& t) { return t.rank() >= 2 && (t.shape().back() == 1 || t.shape().back() == 2); }

Status dft(KernelContext& ctx, int64_t axis_value, DftMode mode) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(kInput));
  if (!is_real_or_complex(*x))
    return make_error("input must be [..., signal, 1 (real) or 2 (complex)], got shape {}", shape_to_string(x->shape()));
  const int64_t rank = static_cast<int64_t>(x->rank());
  const int64_t components = x->shape().back();
  ONNXKIT_ASSIGN(const int64_t axis, normalize_axis(axis_value, rank));
  if (axis == rank - 1)
    return make_error("axis {} names the real/imaginary dim; allowed: [{}, -2] or [0, {}]", axis_value, -rank, rank - 2);
  const bool irfft = mode.inverse && mode.onesided;
  if (mode.onesided && !mode.inverse && components == 2)
    return make_error("a onesided forward DFT (RFFT) takes a real input (last dim 1), got shape {}; set onesided=0",
                      shape_to_string(x->shape()));
  if (irfft && components == 1)
    return make_error("a onesided inverse DFT (IRFFT) takes a complex input (last dim 2), got shape {}; set onesided=0",
                      shape_to_string(x->shape()));

  const int64_t in_length = x->dim(static_cast<size_t>(axis));
  int64_t length = irfft ? 2 * (in_length - 1) : in_length;  // the spec's defaults
  if (ctx.has_input(kDftLength)) {
    ONNXKIT_ASSIGN(length, read_int_scalar(ctx, kDftLength, "dft_length"));
  }
  if (length <= 0 || length > kMaxAttributeValue)
    return make_error("the DFT length must be in [1, {}], got {} (axis {} of shape {})", kMaxAttributeValue, length, axis,
                      shape_to_string(x->shape()));

  Shape out_shape = x->shape();
  out_shape[static_cast<size_t>(axis)] = mode.onesided && !mode.inverse ? length / 2 + 1 : length;
  out_shape.back() = irfft ? 1 : 2;
  ONNXKIT_ASSIGN(const int64_t out_count, checked_size(out_shape, "output"));
  ONNXKIT_ASSIGN(const std::vector<double> in, read_doubles(*x, "input"));
  std::vector<double> out(static_cast<size_t>(out_count));

  const int64_t outer = dims_product(x->shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = dims_product(x->shape(), static_cast<size_t>(axis) + 1, x->rank() - 1);
  const int64_t out_length = out_shape[static_cast<size_t>(axis)], out_components = out_shape.back();
  // IRFFT reads the non-redundant half of the spectrum and mirrors the rest.
  const int64_t half = length / 2 + 1;
  const int64_t read_length = std::min(in_length, irfft ? half : length);
  const double scale = mode.inverse ? 1.0 / static_cast<double>(length) : 1.0;
  FourierPlan plan(static_cast<size_t>(length));
  std::vector<Complex> line(static_cast<size_t>(length));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::fill(line.begin(), line.end(), Complex(0));
      for (int64_t t = 0; t < read_length; ++t) {
        const double* v = &in[static_cast<size_t>(((o * in_length + t) * inner + i) * components)];
        line[static_cast<size_t>(t)] = Complex(v[0], components == 2 ? v[1] : 0);
      }
      if (irfft)
        for (int64_t k = half; k < length; ++k) line[static_cast<size_t>(k)] = std::conj(line[static_cast<size_t>(length - k)]);
      plan.transform(line, mode.inverse);
      for (int64_t k = 0; k < out_length; ++k) {
        double* y = &out[static_cast<size_t>(((o * out_length + k) * inner + i) * out_components)];
        const Complex value = line[static_cast<size_t>(k)] * scale;
        y[0] = value.real();  // IRFFT: the imaginary parts cancel (up to rounding)
        if (out_components == 2) y[1] = value.imag();
      }
    }
  }
  write_numbers(out, ctx.output(0, x->dtype(), out_shape));
  return {};
}

// Frames of frame_length samples every frame_step samples, each multiplied
// by the window and transformed; frames that would run past the end of the
// signal are not taken.
Status stft(KernelContext& ctx, bool onesided) {
  ONNXKIT_ASSIGN(const Tensor* signal, ctx.tensor(kSignal));
  if (signal->rank() != 3 || !is_real_or_complex(*signal))
    return make_error("signal must be [batch, length, 1 (real) or 2 (complex)], got shape {}", shape_to_string(signal->shape()));
  const int64_t batch = signal->dim(0), signal_length = signal->dim(1), components = signal->dim(2);
  if (onesided && components == 2)
    return make_error("onesided=1 needs a real signal (last dim 1), got shape {}; set onesided=0",
                      shape_to_string(signal->shape()));
  ONNXKIT_ASSIGN(const int64_t frame_step, read_int_scalar(ctx, kFrameStep, "frame_step"));
  if (frame_step <= 0) return make_error("frame_step must be positive, got {}", frame_step);

  std::vector<double> window;
  int64_t frame_length = signal_length;
  if (ctx.has_input(kWindow)) {
    ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(kWindow));
    if (w->rank() != 1) return make_error("window must be 1-D, got shape {}", shape_to_string(w->shape()));
    if (w->dtype() != signal->dtype())
      return make_error("window is {} but signal is {}", to_string(w->dtype()), to_string(signal->dtype()));
    ONNXKIT_ASSIGN(window, read_doubles(*w, "window"));
    frame_length = w->dim(0);
  }
  if (ctx.has_input(kFrameLength)) {
    ONNXKIT_ASSIGN(const int64_t given, read_int_scalar(ctx, kFrameLength, "frame_length"));
    if (ctx.has_input(kWindow) && given != frame_length)
      return make_error("frame_length {} differs from the window's length {}", given, frame_length);
    frame_length = given;
  }
  if (frame_length <= 0 || frame_length > signal_length)
    return make_error("frame_length must be in [1, {}] (the signal's length), got {}", signal_length, frame_length);

  const int64_t frames = (signal_length - frame_length) / frame_step + 1;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  const Shape out_shape{batch, frames, bins, 2};
  ONNXKIT_ASSIGN(const int64_t out_count, checked_size(out_shape, "output"));
  ONNXKIT_ASSIGN(const std::vector<double> in, read_doubles(*signal, "signal"));
  std::vector<double> out(static_cast<size_t>(out_count));

  FourierPlan plan(static_cast<size_t>(frame_length));
  std::vector<Complex> line(static_cast<size_t>(frame_length));
  double* y = out.data();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < frame_length; ++t) {
        const double* v = &in[static_cast<size_t>((b * signal_length + f * frame_step + t) * components)];
        const double weight = window.empty() ? 1.0 : window[static_cast<size_t>(t)];
        line[static_cast<size_t>(t)] = Complex(v[0], components == 2 ? v[1] : 0) * weight;
      }
      plan.transform(line, false);
      for (int64_t k = 0; k < bins; ++k) {
        *y++ = line[static_cast<size_t>(k)].real();
        *y++ = line[static_cast<size_t>(k)].imag();
      }
    }
  }
  write_numbers(out, ctx.output(0, signal->dtype(), out_shape));
  return {};
}

}  // namespace

void register_dft(KernelRegistry& r) {
  // Opsets 17-19 take the axis as an attribute (default 1, the first dim
  // after the batch); opset 20 as an optional input (default -2).
  r.add("", "DFT", 17, 19, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          const int64_t axis = info.attr_int("axis", 1);
          const DftMode mode = read_dft_mode(info);
          return ComputeFn([=](KernelContext& ctx) { return dft(ctx, axis, mode); });
        }));
  r.add("", "DFT", 20, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          const DftMode mode = read_dft_mode(info);
          return ComputeFn([=](KernelContext& ctx) -> Status {
            int64_t axis = -2;
            if (ctx.has_input(kAxis)) {
              ONNXKIT_ASSIGN(axis, read_int_scalar(ctx, kAxis, "axis"));
            }
            return dft(ctx, axis, mode);
          });
        }));
  r.add("", "STFT", 17, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          const bool onesided = info.attr_int("onesided", 1) != 0;
          return ComputeFn([=](KernelContext& ctx) { return stft(ctx, onesided); });
        }));
}

}  // namespace onnxkit::runtime::signal
