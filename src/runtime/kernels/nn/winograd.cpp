#include "runtime/kernels/nn/winograd.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/parallel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNXKIT_WINOGRAD 1
#define ONNXKIT_AVX2 __attribute__((target("avx2,fma")))
#define ONNXKIT_AVX512 __attribute__((target("avx512f")))
#else
#define ONNXKIT_WINOGRAD 0
#endif

namespace onnxkit::runtime::nn {
namespace {

constexpr int64_t kLanes = 8;                      // channels per AVX register; a block (channel_block()) holds one or two
constexpr int64_t kPanel = 16;                     // output channels per register tile: two AVX registers
constexpr int64_t kRows = 6;                       // tiles per register tile: 12 accumulators of the 16 registers
constexpr int64_t kWidePanel = 24, kWideRows = 4;  // the other register tile, for channels in 24s
constexpr int64_t kPoints = 16;
// Floats of transformed inputs and products held for one chunk of tiles
// (1 MiB): the products of a chunk are read back while they are still in the
// caches. With many channels chunks grow past it, up to kMaxChunkFloats, so
// that the transformed filters, streamed once per chunk, stay the smaller share.
constexpr int64_t kChunkFloats = int64_t{1} << 18;
constexpr int64_t kMaxChunkFloats = int64_t{1} << 21;

int64_t round_up(int64_t v, int64_t to) { return ceil_div(v, to) * to; }

// U = G g G^T with G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
void transform_filter(const float* g, double u[16]) {
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  double gg[4][3];  // G g
  for (int i = 0; i < 4; ++i)
    for (int b = 0; b < 3; ++b) {
      gg[i][b] = 0;
      for (int a = 0; a < 3; ++a) gg[i][b] += G[i][a] * g[a * 3 + b];
    }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      u[i * 4 + j] = 0;
      for (int b = 0; b < 3; ++b) u[i * 4 + j] += gg[i][b] * G[j][b];
    }
}

#if ONNXKIT_WINOGRAD
// Where blocks are 16 channels oneDNN runs AVX-512 (blocked.h), and so do the products here.
bool products_on_avx512() { return channel_block() == 16; }

// Where the tiles are. Without dilation, image n's tile (ty, tx) covers
// outputs 2ty..2ty+1, 2tx..2tx+1 and reads the 4x4 input patch from
// (2ty - pad_top, 2tx - pad_left). With dilation d along an axis a tile's two
// outputs are d apart, and its patch's four inputs too: the outputs go in
// runs of 2d, whose first d start tiles (tile_start).
struct Geometry {
  int64_t h, w, oh, ow, pad_top, pad_left;
  int64_t dh, dw;                   // dilations
  int64_t tiles_h, tiles_w, tiles;  // tiles over all images
  int64_t block;                    // channel_block(): floats per pixel of a blocked plane
  int64_t in_blocks, out_blocks;
  int64_t in_groups, out_groups;  // per group of the convolution, kLanes channels each; ungrouped, the output's
                                  // cover its padded lanes
};

// The first output of the t-th tile along an axis of dilation d.
int64_t tile_start(int64_t t, int64_t d) { return d == 1 ? 2 * t : 2 * d * (t / d) + t % d; }

// The tiles along an axis of `out` outputs at dilation d: d per whole run of
// 2d outputs, and one for each of a last run's first d outputs.
int64_t tiles_along(int64_t out, int64_t d) { return out / (2 * d) * d + std::min(out % (2 * d), d); }

// V = B^T d B of one tile's 4x4 patch, kLanes channels at once, with
// B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]].
// `plane` is one block of one image, from the group's first lane; point xi
// goes to v + xi * stride. Whole: the patch lies inside the input, and no
// input is checked (most tiles of a map).
template <bool Whole>
ONNXKIT_AVX2 void transform_input(const float* plane, const Geometry& g, int64_t top, int64_t left, float* v, int64_t stride) {
  // Inputs outside load from zeros instead: a patch on the edge has a row
  // or column of them, and branching on each mispredicted.
  alignas(32) static constexpr float kZeros[kLanes] = {};
  bool row_inside[4], col_inside[4];
  for (int i = 0; i < 4; ++i) {
    row_inside[i] = Whole || (top + i * g.dh >= 0 && top + i * g.dh < g.h);
    col_inside[i] = Whole || (left + i * g.dw >= 0 && left + i * g.dw < g.w);
  }
  __m256 d[4][4];
  for (int i = 0; i < 4; ++i) {
    const int64_t row = top + i * g.dh;
    for (int j = 0; j < 4; ++j) {
      const int64_t col = left + j * g.dw;
      d[i][j] = _mm256_loadu_ps(row_inside[i] && col_inside[j] ? plane + (row * g.w + col) * g.block : kZeros);
    }
  }
  __m256 t[4][4];
  for (int j = 0; j < 4; ++j) {
    t[0][j] = _mm256_sub_ps(d[0][j], d[2][j]);
    t[1][j] = _mm256_add_ps(d[1][j], d[2][j]);
    t[2][j] = _mm256_sub_ps(d[2][j], d[1][j]);
    t[3][j] = _mm256_sub_ps(d[1][j], d[3][j]);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(v + (i * 4 + 0) * stride, _mm256_sub_ps(t[i][0], t[i][2]));
    _mm256_storeu_ps(v + (i * 4 + 1) * stride, _mm256_add_ps(t[i][1], t[i][2]));
    _mm256_storeu_ps(v + (i * 4 + 2) * stride, _mm256_sub_ps(t[i][2], t[i][1]));
    _mm256_storeu_ps(v + (i * 4 + 3) * stride, _mm256_sub_ps(t[i][1], t[i][3]));
  }
}

// Six rows of C (six tiles) by 16 columns: C = A * panel, A's rows `lda`
// apart, the panel [depth x 16] contiguous. The accumulators are named one by
// one: held in an array, GCC stores them to the stack on every step.
ONNXKIT_AVX2 void multiply_six_rows(int64_t depth, const float* a, int64_t lda, const float* panel, float* c, int64_t ldc) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda, *a5 = a + 5 * lda;
  for (int64_t q = 0; q < depth; ++q) {
    const __m256 b0 = _mm256_loadu_ps(panel + q * kPanel), b1 = _mm256_loadu_ps(panel + q * kPanel + 8);
    __m256 x = _mm256_broadcast_ss(a0 + q);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a1 + q);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a2 + q);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a3 + q);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a4 + q);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a5 + q);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  const __m256 rows[kRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int64_t r = 0; r < kRows; ++r) {
    _mm256_storeu_ps(c + r * ldc, rows[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, rows[r][1]);
  }
}

// Four rows of C by 24 columns (three AVX registers); otherwise as
// multiply_six_rows, but with every index known once the loops unroll, GCC
// keeps the accumulators' array in registers.
ONNXKIT_AVX2 void multiply_four_rows_wide(int64_t depth, const float* a, int64_t lda, const float* panel, float* c, int64_t ldc) {
  __m256 acc[kWideRows][3];
#pragma GCC unroll 4
  for (int r = 0; r < kWideRows; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < 3; ++j) acc[r][j] = _mm256_setzero_ps();
  for (int64_t q = 0; q < depth; ++q) {
    const float* b = panel + q * kWidePanel;
    const __m256 bv[3] = {_mm256_loadu_ps(b), _mm256_loadu_ps(b + 8), _mm256_loadu_ps(b + 16)};
#pragma GCC unroll 4
    for (int r = 0; r < kWideRows; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + q);
#pragma GCC unroll 3
      for (int j = 0; j < 3; ++j) acc[r][j] = _mm256_fmadd_ps(x, bv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kWideRows; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < 3; ++j) _mm256_storeu_ps(c + r * ldc + j * 8, acc[r][j]);
}

// One panel of `width` (kPanel or kWidePanel) columns.
ONNXKIT_AVX2 void multiply_panel(int64_t width, int64_t rows, int64_t depth, const float* a, const float* panel, float* c,
                                 int64_t ldc) {
  if (width == kWidePanel) {
    for (int64_t r = 0; r < rows; r += kWideRows) multiply_four_rows_wide(depth, a + r * depth, depth, panel, c + r * ldc, ldc);
    return;
  }
  for (int64_t r = 0; r < rows; r += kRows) multiply_six_rows(depth, a + r * depth, depth, panel, c + r * ldc, ldc);
}

// Six rows of C by `Panels` panels (16 columns each, one AVX-512 register),
// the panels `panel_stride` floats apart; otherwise as multiply_six_rows.
// (Twelve rows, 24 accumulators, ran resnet18 no faster.)
template <int Panels>
ONNXKIT_AVX512 void multiply_six_rows_avx512(int64_t depth, const float* a, int64_t lda, const float* panel, int64_t panel_stride,
                                             float* c, int64_t ldc) {
  __m512 acc[kRows][Panels];
  for (auto& row : acc)
    for (__m512& v : row) v = _mm512_setzero_ps();
  const float* p1 = panel + (Panels > 1 ? panel_stride : 0);
  for (int64_t q = 0; q < depth; ++q) {
    __m512 b[Panels];
    b[0] = _mm512_loadu_ps(panel + q * kPanel);
    if constexpr (Panels > 1) b[1] = _mm512_loadu_ps(p1 + q * kPanel);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * lda + q]);
#pragma GCC unroll 2
      for (int j = 0; j < Panels; ++j) acc[r][j] = _mm512_fmadd_ps(x, b[j], acc[r][j]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < Panels; ++j) _mm512_storeu_ps(c + r * ldc + j * kPanel, acc[r][j]);
}

// `count` (1 or 2) panels from `panel` on.
ONNXKIT_AVX512 void multiply_panels_avx512(int64_t rows, int64_t depth, const float* a, const float* panel, int64_t count,
                                           float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; r += kRows) {
    if (count == 2) multiply_six_rows_avx512<2>(depth, a + r * depth, depth, panel, depth * kPanel, c + r * ldc, ldc);
    else multiply_six_rows_avx512<1>(depth, a + r * depth, depth, panel, 0, c + r * ldc, ldc);
  }
}

// Y = A^T M A with A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], then bias, the
// residual, the activation; written where the tile lies inside the output.
// Point xi of M is at m + xi * stride; `plane` and `residual` are one block
// of one image of the output and the residual, from the group's first lane.
// Lanes from `valid` on are padded channels and stay zero.
ONNXKIT_AVX2 void transform_output(const float* m, int64_t stride, const Geometry& g, int64_t top, int64_t left,
                                   const float* bias8, const float* residual, const FusedActivation& act, int64_t valid,
                                   float* plane) {
  const __m256 bias = _mm256_loadu_ps(bias8);
  const __m256 keep = _mm256_castsi256_ps(
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  __m256 s[2][4];
  for (int j = 0; j < 4; ++j) {
    const __m256 m0 = _mm256_loadu_ps(m + (0 * 4 + j) * stride), m1 = _mm256_loadu_ps(m + (1 * 4 + j) * stride);
    const __m256 m2 = _mm256_loadu_ps(m + (2 * 4 + j) * stride), m3 = _mm256_loadu_ps(m + (3 * 4 + j) * stride);
    s[0][j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
    s[1][j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
  }
  const __m256 lower = _mm256_set1_ps(act.kind == FusedActivation::Kind::clip ? act.min : 0.0f);
  const __m256 upper = _mm256_set1_ps(act.max);
  for (int i = 0; i < 2; ++i) {
    const int64_t row = top + i * g.dh;
    if (row >= g.oh) break;
    const __m256 y[2] = {_mm256_add_ps(_mm256_add_ps(s[i][0], s[i][1]), s[i][2]),
                         _mm256_sub_ps(_mm256_sub_ps(s[i][1], s[i][2]), s[i][3])};
    for (int j = 0; j < 2; ++j) {
      const int64_t col = left + j * g.dw;
      if (col >= g.ow) break;
      const int64_t at = (row * g.ow + col) * g.block;
      __m256 v = _mm256_add_ps(y[j], bias);
      if (residual != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(residual + at));
      // The bound first: max and min return their second operand when one
      // is NaN, and NaN goes through as in the other convolution paths.
      if (act.kind != FusedActivation::Kind::none) v = _mm256_max_ps(lower, v);
      if (act.kind == FusedActivation::Kind::clip) v = _mm256_min_ps(upper, v);
      _mm256_storeu_ps(plane + at, _mm256_and_ps(v, keep));
    }
  }
}
#endif

}  // namespace

void WinogradConv::transform_filters() const {
#if ONNXKIT_WINOGRAD
  const int64_t depth = depth_, columns = columns_, panel = panel_;
  filters_.assign(static_cast<size_t>(groups_ * kPoints * depth * columns), 0.0f);
  bias_.assign(static_cast<size_t>(groups_ * columns), 0.0f);
  const float* g = w_->data<float>();
  for (int64_t k = 0; k < groups_; ++k)
    for (int64_t m = 0; m < out_channels_; ++m) {
      for (int64_t c = 0; c < in_channels_; ++c) {
        double u[kPoints];
        transform_filter(g + ((k * out_channels_ + m) * in_channels_ + c) * 9, u);
        for (int64_t xi = 0; xi < kPoints; ++xi)
          filters_[static_cast<size_t>((((k * kPoints + xi) * columns / panel + m / panel) * depth + c) * panel + m % panel)] =
              static_cast<float>(u[xi]);
      }
      if (bias_in_ != nullptr) bias_[static_cast<size_t>(k * columns + m)] = bias_in_->data<float>()[k * out_channels_ + m];
    }
#endif
}

WinogradConv::WinogradConv(int64_t groups, int64_t in_channels, int64_t out_channels, FusedActivation activation)
    : groups_(groups), in_channels_(in_channels), out_channels_(out_channels), depth_(round_up(in_channels, kLanes)) {
  // AVX-512's products take panels of 16 (one register) only.
#if ONNXKIT_WINOGRAD
  const bool wide = !products_on_avx512() && round_up(out_channels, kWidePanel) < round_up(out_channels, kPanel);
#else
  const bool wide = false;
#endif
  panel_ = wide ? kWidePanel : kPanel;
  rows_ = wide ? kWideRows : kRows;
  columns_ = round_up(out_channels, panel_);
  activation_ = activation;
}

std::unique_ptr<WinogradConv> WinogradConv::create(const ConvAttributes& attrs, const Tensor& w, const Tensor* bias,
                                                   FusedActivation activation) {
#if ONNXKIT_WINOGRAD
  const WindowAttributes& win = attrs.window;
  using Kind = FusedActivation::Kind;
  // Relu and Clip bound the outputs in the transform; Swish and HardSwish
  // (YOLO's SiLU; zero at zero, so padded channels stay zero) follow in a
  // pass over the output, as they do after oneDNN's primitives.
  if (activation.kind != Kind::none && activation.kind != Kind::relu && activation.kind != Kind::clip &&
      activation.kind != Kind::swish && activation.kind != Kind::hard_swish)
    return nullptr;
  if (!cpu_has_avx2_fma() || w.dtype() != DataType::float32 || w.rank() != 4 || w.dim(2) != 3 || w.dim(3) != 3 ||
      !all_ones(win.strides) || (!win.kernel_shape.empty() && win.kernel_shape != std::vector<int64_t>{3, 3}))
    return nullptr;
  // A group's channels read and written as whole registers of whole blocks:
  // where blocks are 16 channels a group could end mid-block, beside
  // padded lanes no group would write.
  const int64_t groups = attrs.group;
  if (groups < 1 || w.dim(0) % groups != 0 ||
      (groups > 1 && (channel_block() != kLanes || w.dim(0) / groups % kLanes != 0 || w.dim(1) % kLanes != 0)))
    return nullptr;
  if (bias != nullptr && (bias->dtype() != DataType::float32 || bias->numel() != w.dim(0))) return nullptr;
  std::unique_ptr<WinogradConv> conv(new WinogradConv(groups, w.dim(1), w.dim(0) / groups, activation));
  conv->w_ = std::make_shared<const Tensor>(w);  // shares w's storage
  if (bias != nullptr) conv->bias_in_ = std::make_shared<const Tensor>(*bias);
  return conv;
#else
  (void)attrs, (void)w, (void)bias, (void)activation;
  return nullptr;
#endif
}

std::shared_ptr<const WinogradConv> WinogradConv::shared(const ConvAttributes& attrs, const Tensor& w, const Tensor* bias,
                                                         FusedActivation activation) {
  std::shared_ptr<const WinogradConv> made = create(attrs, w, bias, activation);
  if (made == nullptr) return nullptr;  // the attributes rule it out: nothing to share
  using Key = std::tuple<const void*, Shape, const void*, decltype(activation.fields())>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const WinogradConv>> convs;
  const Key key{w.raw(), w.shape(), bias != nullptr ? bias->raw() : nullptr, activation.fields()};
  std::lock_guard lock(mutex);
  if (std::shared_ptr<const WinogradConv> existing = convs[key].lock()) return existing;
  std::erase_if(convs, [](const auto& entry) { return entry.second.expired(); });
  convs[key] = made;
  return made;
}

bool WinogradConv::pays_off(const ConvParams& p) const {
  const WindowGeometry& win = p.window;
  // Dilated, a last run of 2d outputs may leave up to d of its tiles' outputs
  // unused: at most a quarter of them where there are 4d outputs or more
  // (DeepLabV3's ResNet at dilation 2 and 4 on 28 x 28; its ASPP rates, 12
  // and up on the same map, read mostly padding and go to oneDNN).
  for (size_t a = 0; a < 2; ++a)
    if (win.dilations[a] > 1 && win.out[a] < 4 * win.dilations[a]) return false;
  const int64_t tiles = p.batch * tiles_along(win.out[0], win.dilations[0]) * tiles_along(win.out[1], win.dilations[1]);
  // The products run on whole register tiles of six tiles: below two of them
  // the padding rows and the filters' 16/9 more floats outweigh the saving.
  // Next to oneDNN's AVX-512 direct convolution, twice as fast as its AVX2
  // one, streaming the larger filters costs more, so there it takes four
  // register tiles; and with a single block of input channels the transforms
  // outweigh the products (figures in docs/performance.md, "Rules behind the
  // kernels").
  if (products_on_avx512()) return tiles >= 4 * kRows && in_channels_ > channel_block();
  return tiles >= 2 * rows_;
}

Status WinogradConv::run(const ConvParams& p, const Tensor& x, Tensor& y, const Tensor* residual) const {
#if ONNXKIT_WINOGRAD
  const WindowGeometry& win = p.window;
  const int64_t in_total = groups_ * in_channels_, out_total = groups_ * out_channels_;
  if (p.in_channels != in_total || p.out_channels != out_total || p.group != groups_ || win.rank() != 2 ||
      win.kernel != std::vector<int64_t>{3, 3} || win.strides != std::vector<int64_t>{1, 1})
    return make_error("the Winograd convolution of {} -> {} channels in {} groups was given another convolution", in_total,
                      out_total, groups_);
  const Shape x_shape = blocked_shape(p.batch, in_total, win.in[0], win.in[1]);
  const Shape y_shape = blocked_shape(p.batch, out_total, win.out[0], win.out[1]);
  if (x.dtype() != DataType::float32 || x.shape() != x_shape || y.dtype() != DataType::float32 || y.shape() != y_shape)
    return make_error("the Winograd convolution expects float32 {} -> {}, got {} {} -> {} {}", shape_to_string(x_shape),
                      shape_to_string(y_shape), to_string(x.dtype()), shape_to_string(x.shape()), to_string(y.dtype()),
                      shape_to_string(y.shape()));
  ONNXKIT_TRY(check_residual(residual, y));
  std::call_once(filters_transformed_, [this] { transform_filters(); });
  Geometry g{.h = win.in[0],
             .w = win.in[1],
             .oh = win.out[0],
             .ow = win.out[1],
             .pad_top = win.pads_begin[0],
             .pad_left = win.pads_begin[1],
             .dh = win.dilations[0],
             .dw = win.dilations[1]};
  g.tiles_h = tiles_along(g.oh, g.dh);
  g.tiles_w = tiles_along(g.ow, g.dw);
  g.tiles = p.batch * g.tiles_h * g.tiles_w;
  g.block = channel_block();
  g.in_blocks = ceil_div(in_total, g.block);
  g.out_blocks = ceil_div(out_total, g.block);
  g.in_groups = depth_ / kLanes;
  // One group covers the last block's padded lanes too; groups are whole blocks (create).
  g.out_groups = groups_ == 1 ? g.out_blocks * g.block / kLanes : out_channels_ / kLanes;
  if (g.tiles == 0) return {};
  const int64_t per_tile = kPoints * (depth_ + columns_);
  int64_t chunk = std::max({rows_, kChunkFloats / per_tile / rows_ * rows_,
                            std::min(round_up(depth_ / 2, rows_), kMaxChunkFloats / per_tile / rows_ * rows_)});
  int64_t chunks = ceil_div(g.tiles, chunk);
  const int threads = available_threads();
  // With two chunks (of any group) for every thread, each thread takes whole
  // chunks through all three steps in its own buffers, with no waiting (one
  // group's chunks shrunk a little so that every thread gets as many);
  // otherwise the threads share each step of one chunk at a time.
  const bool own_chunks = threads > 1 && chunks * groups_ >= 2 * threads;
  if (own_chunks && groups_ == 1) chunks = round_up(chunks, threads);
  // The tiles split evenly: a last chunk of a few tiles would stream all the
  // filters again for little work.
  chunk = round_up(ceil_div(g.tiles, chunks), rows_);
  chunks = ceil_div(g.tiles, chunk);
  const int64_t buffers = own_chunks ? threads : 1;
  // Per buffer: transformed inputs [16][chunk][depth], then products [16][chunk][columns].
  std::unique_ptr<float[]> scratch(new float[static_cast<size_t>(buffers * chunk * per_tile)]);
  const int64_t v_stride = chunk * depth_, m_stride = chunk * columns_, panels = columns_ / panel_;
  const float* xs = x.data<float>();
  float* ys = y.mutable_data<float>();
  const float* rs = residual != nullptr ? residual->data<float>() : nullptr;
  const int64_t in_plane = g.h * g.w * g.block, out_plane = g.oh * g.ow * g.block;

  // A piece of work: chunk c of one group's tiles, and where that group's
  // channels start in an image (block and lane).
  struct Part {
    int64_t group, c;
    int64_t in_block, in_lane, out_block, out_lane;
  };
  auto part_of = [&](int64_t index) {
    const int64_t group = index / chunks, in_first = group * in_channels_, out_first = group * out_channels_;
    return Part{group, index % chunks, in_first / g.block, in_first % g.block, out_first / g.block, out_first % g.block};
  };
  // f(q, offset) for each group q of kLanes channels from `block`'s `lane`
  // on: offset is where the lanes start from an image's first block (their
  // block's plane, plus the lane). Counted, not divided: per group,
  // divisions cost as much as a transform.
  auto for_each_group = [&](int64_t block, int64_t lane, int64_t groups, int64_t plane_floats, auto&& f) {
    for (int64_t q = 0; q < groups; ++q) {
      f(q, block * plane_floats + lane);
      if ((lane += kLanes) == g.block) lane = 0, ++block;
    }
  };

  // The three steps on a part, by work item (a tile, or a point's panels);
  // `buffer` is the part's scratch.
  auto count_of = [&](int64_t c) { return std::min(chunk, g.tiles - c * chunk); };  // its tiles
  auto rows_of = [&](int64_t c) { return round_up(count_of(c), rows_); };           // in register tiles
  // Each tile's image and the output row and column of its top left
  // corner, counted once rather than divided for twice in every group.
  struct Corner {
    int64_t n, row, col;
  };
  std::vector<Corner> corners(static_cast<size_t>(g.tiles));
  for (int64_t t = 0, n = 0, ty = 0, tx = 0; t < g.tiles; ++t) {
    corners[static_cast<size_t>(t)] = Corner{n, tile_start(ty, g.dh), tile_start(tx, g.dw)};
    if (++tx == g.tiles_w && (tx = 0, ++ty == g.tiles_h)) ty = 0, ++n;
  }
  auto corner = [&](int64_t t) { return corners[static_cast<size_t>(t)]; };
  auto transform_inputs = [&](const Part& part, float* buffer, int64_t local) {
    float* dst = buffer + local * depth_;
    const int64_t t = part.c * chunk + local;
    if (t >= g.tiles) {  // rows past the last tile: zeros, multiplied and never read
      for (int64_t xi = 0; xi < kPoints; ++xi) std::fill_n(dst + xi * v_stride, depth_, 0.0f);
      return;
    }
    const Corner at = corner(t);
    const float* image = xs + at.n * g.in_blocks * in_plane;
    const int64_t top = at.row - g.pad_top, left = at.col - g.pad_left;
    const bool whole = top >= 0 && left >= 0 && top + 3 * g.dh < g.h && left + 3 * g.dw < g.w;
    for_each_group(part.in_block, part.in_lane, g.in_groups, in_plane, [&](int64_t q, int64_t offset) {
      if (whole) transform_input<true>(image + offset, g, top, left, dst + q * kLanes, v_stride);
      else transform_input<false>(image + offset, g, top, left, dst + q * kLanes, v_stride);
    });
  };
  // A work item is one panel of one point, or two on AVX-512.
  const bool wide = products_on_avx512();
  const int64_t per_item = wide ? 2 : 1, items_per_point = ceil_div(panels, per_item);
  auto multiply = [&](const Part& part, float* buffer, int64_t item) {
    const int64_t xi = item / items_per_point, panel = item % items_per_point * per_item;
    const float* a = buffer + xi * v_stride;
    const float* filters = filters_.data() + ((part.group * kPoints + xi) * panels + panel) * depth_ * panel_;
    float* products = buffer + kPoints * v_stride + xi * m_stride + panel * panel_;
    if (wide) multiply_panels_avx512(rows_of(part.c), depth_, a, filters, std::min(per_item, panels - panel), products, columns_);
    else multiply_panel(panel_, rows_of(part.c), depth_, a, filters, products, columns_);
  };
  const auto split = activation_.split_bound();
  const FusedActivation &bound = split.first, &after = split.second;
  auto transform_outputs = [&](const Part& part, float* buffer, int64_t local) {
    const Corner at = corner(part.c * chunk + local);
    const int64_t image = at.n * g.out_blocks * out_plane;
    const float* products = buffer + kPoints * v_stride + local * columns_;
    const float* bias = bias_.data() + part.group * columns_;
    for_each_group(part.out_block, part.out_lane, g.out_groups, out_plane, [&](int64_t q, int64_t offset) {
      transform_output(products + q * kLanes, m_stride, g, at.row, at.col, bias + q * kLanes,
                       rs != nullptr ? rs + image + offset : nullptr, bound, out_channels_ - q * kLanes, ys + image + offset);
    });
  };

  const int64_t parts = chunks * groups_;
  if (own_chunks) {
#pragma omp parallel num_threads(threads)
    {
      float* buffer = scratch.get() + omp_get_thread_num() * chunk * per_tile;
#pragma omp for schedule(dynamic)
      for (int64_t index = 0; index < parts; ++index) {
        const Part part = part_of(index);
        for (int64_t item = 0; item < rows_of(part.c); ++item) transform_inputs(part, buffer, item);
        for (int64_t item = 0; item < kPoints * items_per_point; ++item) multiply(part, buffer, item);
        for (int64_t item = 0; item < count_of(part.c); ++item) transform_outputs(part, buffer, item);
      }
    }
  } else {
    float* buffer = scratch.get();
#pragma omp parallel num_threads(threads) if (threads > 1)
    for (int64_t index = 0; index < parts; ++index) {
      const Part part = part_of(index);
#pragma omp for schedule(static)
      for (int64_t item = 0; item < rows_of(part.c); ++item) transform_inputs(part, buffer, item);
#pragma omp for schedule(static)
      for (int64_t item = 0; item < kPoints * items_per_point; ++item) multiply(part, buffer, item);
#pragma omp for schedule(static)
      for (int64_t item = 0; item < count_of(part.c); ++item) transform_outputs(part, buffer, item);
    }
  }
  activate_floats_shared(after, ys, y.numel(), threads);
  return {};
#else
  (void)p, (void)x, (void)y, (void)residual;
  return make_error("Winograd convolution needs an x86-64 CPU with AVX2 and FMA");
#endif
}

}  // namespace onnxkit::runtime::nn
