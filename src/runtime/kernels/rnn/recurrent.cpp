// LSTM, GRU and RNN over a whole sequence.
//
// Per direction the work is: one product X * W^T + B for every time step at
// once (both directions share it: W is one [directions * gates * hidden,
// input] matrix, read in oneDNN's layout for it when constant), then for
// each step one product h * R^T for the whole batch and all gates, and the
// gate arithmetic row by row (one pass for the default activations in
// float, fused_gates.h). R^T is packed into panels once
// (recurrent_product.h): a step of a small layer at batch 1 is a few
// microseconds, spent streaming R from the cache, with no room for a GEMM's
// setup or its packing; at batch 1 the threads share each step by blocks
// of hidden units (DirectionRun::run_split). Sequences shorter than X
// (sequence_lens) stop updating their row after their last step, so the
// final states are those of each sequence's own last step; Y is zero past
// the end.
//
// Choices the spec leaves open, taken as ONNX Runtime does: `clip` bounds the
// inputs of the gate activations (not the cell state fed to h), and
// input_forget replaces the forget gate by 1 - i. A sequence of length 0
// keeps its initial state as its final state.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "runtime/kernels/gemm.h"
#include "runtime/kernels/math/packed_matmul.h"
#include "runtime/kernels/rnn/fused_gates.h"
#include "runtime/kernels/rnn/recurrent_product.h"
#include "runtime/kernels/rnn/rnn.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::rnn {
namespace {

// Inputs by position; LSTM alone has the last two.
enum Input : size_t { kX = 0, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kPeephole };

// Elements of gate arithmetic per step below which the rows stay on one thread.
constexpr int64_t kParallelGateWork = 1 << 14;
// Rows of a step up to which its product reads the packed panels; more rows
// make it a GEMM, which sgemm runs faster from R^T as it is.
constexpr int64_t kPackedRows = 1;
// Hidden units per block when the packed product's columns go block by
// block (Weights::unit_blocks): 32 units of every gate fill whole panels.
constexpr int64_t kUnitBlock = 32;
// Multiply-adds of a step's product from which a batch of one shares its
// steps among the threads, one barrier a step (DirectionRun::run_split).
constexpr int64_t kSplitStepMacs = 1 << 15;

const char* op_name(Cell cell) { return cell == Cell::lstm ? "LSTM" : cell == Cell::gru ? "GRU" : "RNN"; }
int64_t gate_count(Cell cell) { return cell == Cell::lstm ? 4 : cell == Cell::gru ? 3 : 1; }

struct Config {
  Cell cell = Cell::lstm;
  int64_t directions = 1;
  bool reverse = false;                 // direction = reverse: the only direction runs backwards
  int64_t hidden_size = -1;             // -1: the attribute is absent and R's shape says
  std::vector<Activation> activations;  // per direction: f, g, h (LSTM), f, g (GRU), f (RNN)
  bool has_clip = false;
  float clip = 0;
  bool batch_first = false;          // layout = 1
  bool input_forget = false;         // LSTM
  bool linear_before_reset = false;  // GRU

  int64_t activations_per_direction() const { return cell == Cell::lstm ? 3 : cell == Cell::gru ? 2 : 1; }
  // GRU without linear_before_reset multiplies h by the z and r rows of R,
  // then r * h by the h rows: two products per step, each with its own
  // packed columns. Every other cell takes all gates in one.
  bool split_product() const { return cell == Cell::gru && !linear_before_reset; }
  // Whether direction d's gates take one fused pass (fused_gates.h).
  bool fused_gates(int64_t d, bool peepholes) const {
    const Activation* act = activations.data() + d * activations_per_direction();
    using Kind = Activation::Kind;
    if (cell == Cell::lstm)
      return act[0].kind == Kind::sigmoid && act[1].kind == Kind::tanh && act[2].kind == Kind::tanh && !peepholes &&
             !input_forget;
    return cell == Cell::gru && linear_before_reset && act[0].kind == Kind::sigmoid && act[1].kind == Kind::tanh;
  }
};

Result<Config> read_config(const KernelInfo& info, Cell cell) {
  Config c;
  c.cell = cell;
  const std::string direction = info.attr_string("direction", "forward");
  if (direction == "reverse") {
    c.reverse = true;
  } else if (direction == "bidirectional") {
    c.directions = 2;
  } else if (direction != "forward") {
    return make_error("attribute 'direction' is '{}'; it must be forward, reverse or bidirectional", direction);
  }
  if (info.has_attr("hidden_size")) {
    c.hidden_size = info.attr_int("hidden_size", -1);
    if (c.hidden_size <= 0) return make_error("attribute 'hidden_size' is {}; it must be positive", c.hidden_size);
    if (c.hidden_size > kMaxElements) return make_error("attribute 'hidden_size' is {}, too large", c.hidden_size);
  }
  const std::vector<std::string> defaults = cell == Cell::lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : cell == Cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                : std::vector<std::string>{"Tanh"};
  ONNXKIT_ASSIGN(c.activations, read_activations(info, defaults, c.directions));
  if (info.has_attr("clip")) {
    c.clip = info.attr_float("clip", 0);
    if (!(c.clip > 0)) return make_error("attribute 'clip' is {}; it must be positive", c.clip);
    c.has_clip = true;
  }
  // layout arrived with opset 14; before, X and the states are sequence-major.
  if (info.opset() >= 14) {
    const int64_t layout = info.attr_int("layout", 0);
    if (layout != 0 && layout != 1) return make_error("attribute 'layout' is {}; it must be 0 or 1", layout);
    c.batch_first = layout == 1;
  }
  if (cell == Cell::lstm) c.input_forget = info.attr_int("input_forget", 0) != 0;
  if (cell == Cell::gru) c.linear_before_reset = info.attr_int("linear_before_reset", 0) != 0;
  return c;
}

// The elements of a float tensor in the compute type C: the tensor's own
// memory when it already is C, else a converted copy in `copy`.
template <class C> const C* as_compute(const Tensor& t, std::vector<C>& copy) {
  if (t.dtype() == data_type_of<C>()) return t.data<C>();
  copy.resize(static_cast<size_t>(t.numel()));
  (void)dispatch_float(t.dtype(), [&]<class T>() -> Status {
    const T* p = t.data<T>();
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = static_cast<C>(p[i]);
    return {};
  });
  return copy.data();
}

// W, R, B and P checked against each other and made ready for the compute
// type C: built once when they are initializers, else on each run.
template <class C> struct Weights {
  int64_t hidden = 0, input = 0;
  DataType type = DataType::undefined;  // of W, R, B and P
  const C* w = nullptr;                 // [directions * gates * hidden, input]
  // W^T in the layout of oneDNN's matmul, float32 W that is an initializer
  // only; null when oneDNN has no such layout (sgemm reads w then).
  std::unique_ptr<const math::PackedMatMul> w_packed;
  // R^T per direction, its columns for all gates (or, split_product, for z
  // and r, then for h): [direction * products + product].
  std::vector<PackedColumns<C>> recurrent;
  // Float cells whose gates are fused in every direction have their packed
  // columns in blocks of kUnitBlock hidden units, block k holding gate q's
  // columns of units [k B, k B + B) at k G B + q B (G gates; units past
  // `hidden` zero): a product of whole blocks gives every gate of its units,
  // so that threads can each own some units, their product and their gates.
  bool unit_blocks = false;
  int64_t blocks = 0;  // of kUnitBlock units, when unit_blocks
  std::vector<C> r_t;  // [directions, hidden, gates * hidden]: R^T as it is, for larger batches
  // Wb + Rb per direction and gate, added by the input projection; for GRU
  // under linear_before_reset the hidden gate's Rb is kept apart, since the
  // reset gate multiplies it.
  std::vector<C> bias;        // [directions, gates * hidden]
  std::vector<C> reset_bias;  // [directions, hidden], GRU with linear_before_reset only
  std::vector<C> peephole;    // [directions, 3 * hidden] (i, o, f), empty without P
  // What w points into.
  Tensor w_tensor;
  std::vector<C> w_copy;
};

// `constant`: the weights are the node's initializers, made ready once for
// every run, worth a copy of W in oneDNN's layout.
template <class C>
Result<std::shared_ptr<const Weights<C>>> make_weights(const Config& cfg, const Tensor& w, const Tensor& r, const Tensor* b,
                                                       const Tensor* p, bool constant) {
  const int64_t gates = gate_count(cfg.cell), dirs = cfg.directions;
  if (!is_floating(w.dtype())) return make_error("W has element type {}; it must be a float type", to_string(w.dtype()));
  for (auto [t, name] : {std::pair{&r, "R"}, std::pair{b, "B"}, std::pair{p, "P"}})
    if (t != nullptr && t->dtype() != w.dtype())
      return make_error("{} has element type {} and W has {}; they must match", name, to_string(t->dtype()),
                        to_string(w.dtype()));
  if (w.rank() != 3)
    return make_error("W must be 3-D [num_directions, {}*hidden_size, input_size], got shape {}", gates,
                      shape_to_string(w.shape()));
  if (r.rank() != 3)
    return make_error("R must be 3-D [num_directions, {}*hidden_size, hidden_size], got shape {}", gates,
                      shape_to_string(r.shape()));
  const int64_t hidden = cfg.hidden_size >= 0 ? cfg.hidden_size : r.dim(2);
  if (hidden > kMaxElements) return make_error("R has shape {}: hidden_size {} is too large", shape_to_string(r.shape()), hidden);
  const std::string context = fmt::format("{} direction{} and hidden_size {}{}", dirs, dirs == 1 ? "" : "s", hidden,
                                          cfg.hidden_size >= 0 ? "" : " (from R)");
  auto expect = [&](const Tensor& t, const char* name, const Shape& want) -> Status {
    if (t.shape() != want)
      return make_error("{} has shape {}; for {} it must be {}", name, shape_to_string(t.shape()), context,
                        shape_to_string(want));
    return {};
  };
  ONNXKIT_TRY(expect(r, "R", {dirs, gates * hidden, hidden}));
  ONNXKIT_TRY(expect(w, "W", {dirs, gates * hidden, w.dim(2)}));
  if (b != nullptr) ONNXKIT_TRY(expect(*b, "B", {dirs, 2 * gates * hidden}));
  if (p != nullptr) ONNXKIT_TRY(expect(*p, "P", {dirs, 3 * hidden}));

  auto out = std::make_shared<Weights<C>>();
  out->hidden = hidden;
  out->input = w.dim(2);
  out->type = w.dtype();
  out->w_tensor = w;
  out->w = as_compute(w, out->w_copy);
  if (constant && std::is_same_v<C, float>) {
    // On this thread alone: the session is being built, its thread count not
    // yet in force, and a team started here would stay behind, spinning.
    const ThreadLimit one(1);
    out->w_packed = math::PackedMatMul::create(w.reshaped({dirs * w.dim(1), w.dim(2)}), true);
  }
  const int64_t gh = gates * hidden;
  {
    std::vector<C> copy;
    const C* rp = as_compute(r, copy);
    out->unit_blocks = std::is_same_v<C, float>;
    for (int64_t d = 0; d < dirs; ++d) out->unit_blocks = out->unit_blocks && cfg.fused_gates(d, p != nullptr);
    out->blocks = (hidden + kUnitBlock - 1) / kUnitBlock;
    for (int64_t d = 0; d < dirs; ++d) {
      const C* rd = rp + d * gh * hidden;
      if (out->unit_blocks) {
        std::vector<C> rows(static_cast<size_t>(out->blocks * gates * kUnitBlock * hidden), C(0));
        for (int64_t k = 0; k < out->blocks; ++k)
          for (int64_t q = 0; q < gates; ++q)
            for (int64_t u = 0; u < kUnitBlock && k * kUnitBlock + u < hidden; ++u)
              std::copy_n(rd + (q * hidden + k * kUnitBlock + u) * hidden, hidden,
                          rows.data() + ((k * gates + q) * kUnitBlock + u) * hidden);
        out->recurrent.emplace_back(rows.data(), hidden, hidden, out->blocks * gates * kUnitBlock);
      } else if (cfg.split_product()) {
        out->recurrent.emplace_back(rd, hidden, hidden, 2 * hidden);
        out->recurrent.emplace_back(rd + 2 * hidden * hidden, hidden, hidden, hidden);
      } else {
        out->recurrent.emplace_back(rd, hidden, hidden, gh);
      }
    }
    out->r_t.resize(static_cast<size_t>(dirs * gh * hidden));
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t j = 0; j < gh; ++j)
        for (int64_t k = 0; k < hidden; ++k)
          out->r_t[static_cast<size_t>((d * hidden + k) * gh + j)] = rp[(d * gh + j) * hidden + k];
  }
  const bool split_reset = cfg.cell == Cell::gru && cfg.linear_before_reset;
  out->bias.assign(static_cast<size_t>(dirs * gh), C(0));
  if (split_reset) out->reset_bias.assign(static_cast<size_t>(dirs * hidden), C(0));
  if (b != nullptr) {
    std::vector<C> copy;
    const C* bp = as_compute(*b, copy);
    for (int64_t d = 0; d < dirs; ++d) {
      const C* wb = bp + d * 2 * gh;
      const C* rb = wb + gh;
      for (int64_t j = 0; j < gh; ++j) {
        const bool apart = split_reset && j >= 2 * hidden;
        out->bias[static_cast<size_t>(d * gh + j)] = apart ? wb[j] : wb[j] + rb[j];
        if (apart) out->reset_bias[static_cast<size_t>(d * hidden + j - 2 * hidden)] = rb[j];
      }
    }
  }
  if (p != nullptr) {
    std::vector<C> copy;
    const C* pp = as_compute(*p, copy);
    out->peephole.assign(pp, pp + p->numel());
  }
  return std::shared_ptr<const Weights<C>>(std::move(out));
}

// One run: the inputs in the compute type and where the outputs go.
template <class C> struct Problem {
  const Config& cfg;
  const Weights<C>& w;
  int64_t seq = 0, batch = 0;
  const C* x = nullptr;
  const C* h0 = nullptr;  // null: zeros
  const C* c0 = nullptr;
  const int64_t* lengths = nullptr;  // null: every sequence is `seq` long
  C* y = nullptr;                    // null when not wanted
  C* yh = nullptr;
  C* yc = nullptr;
};

// The state and scratch of one direction, in the run's one buffer,
// allocated before any thread starts: nothing may throw inside a parallel
// region.
template <class C> struct DirectionState {
  C* h;
  C* c;  // LSTM only, else null
  C* gates;
  C* scratch;
};

// Runs one direction through the sequence.
template <class C> class DirectionRun {
 public:
  DirectionRun(const Problem<C>& p, int64_t d, const C* xp, DirectionState<C>& st)
      : p_(p),
        cfg_(p.cfg),
        d_(d),
        hidden_(p.w.hidden),
        gh_(gate_count(p.cfg.cell) * p.w.hidden),
        backward_(p.cfg.reverse || d == 1),
        act_(p.cfg.activations.data() + d * p.cfg.activations_per_direction()),
        recurrent_(p.w.recurrent.data() + d * (p.cfg.split_product() ? 2 : 1)),
        r_t_(p.w.r_t.data() + d * hidden_ * gh_),
        reset_bias_(p.w.reset_bias.empty() ? nullptr : p.w.reset_bias.data() + d * hidden_),
        peephole_(p.w.peephole.empty() ? nullptr : p.w.peephole.data() + d * 3 * hidden_),
        xp_(xp + d * gh_),
        xp_ld_(p.cfg.directions * gh_),
        h_(st.h),
        c_(st.c),
        gates_(st.gates),
        scratch_(st.scratch),
        fused_(std::is_same_v<C, float> && p.cfg.fused_gates(d, peephole_ != nullptr)),
        unit_blocks_(p.w.unit_blocks) {}

  void run() {
    const int64_t H = hidden_;
    for (int64_t b = 0; b < p_.batch; ++b) {
      if (p_.h0 != nullptr) std::copy_n(p_.h0 + state_offset(b), H, h_ + b * H);
      if (p_.c0 != nullptr && c_ != nullptr) std::copy_n(p_.c0 + state_offset(b), H, c_ + b * H);
    }
    if (const int threads = split_threads(); threads > 1) {
      run_split(threads);
    } else {
      run_steps();
    }
    for (int64_t b = 0; b < p_.batch; ++b) {
      if (p_.yh != nullptr) std::copy_n(h_ + b * H, H, p_.yh + state_offset(b));
      if (p_.yc != nullptr) std::copy_n(c_ + b * H, H, p_.yc + state_offset(b));
    }
  }

 private:
  int64_t length(int64_t b) const { return p_.lengths != nullptr ? p_.lengths[b] : p_.seq; }
  // Where row b of initial_h, initial_c, Y_h and Y_c is.
  int64_t state_offset(int64_t b) const { return (cfg_.batch_first ? b * cfg_.directions + d_ : d_ * p_.batch + b) * hidden_; }
  int64_t y_offset(int64_t t, int64_t b) const {
    return (cfg_.batch_first ? (b * p_.seq + t) * cfg_.directions + d_ : (t * cfg_.directions + d_) * p_.batch + b) * hidden_;
  }
  // The projected input of sequence b at time t: X's rows keep X's layout.
  const C* projected(int64_t t, int64_t b) const { return xp_ + (cfg_.batch_first ? b * p_.seq + t : t * p_.batch + b) * xp_ld_; }

  // f(b, x) for every row among the first `rows` still running at step s,
  // x being its projected input; the row's new h then goes to Y.
  template <class F> void for_rows(int64_t s, int64_t rows, bool write_y, F&& f) {
    parallel_for(rows, rows * gh_ >= kParallelGateWork, [&](int64_t b) {
      const int64_t len = length(b);
      if (s >= len) return;
      const int64_t t = backward_ ? len - 1 - s : s;
      f(b, projected(t, b));
      if (write_y && p_.y != nullptr) std::copy_n(h_ + b * hidden_, hidden_, p_.y + y_offset(t, b));
    });
  }

  // The bound of the fused gates: infinity when there is no clip.
  float clip_bound() const { return cfg_.has_clip ? cfg_.clip : INFINITY; }

  void clip(C* v, int64_t n) const {
    if (!cfg_.has_clip) return;
    const C bound = static_cast<C>(cfg_.clip);
    for (int64_t j = 0; j < n; ++j) v[j] = std::min(std::max(v[j], -bound), bound);
  }

  // Step by step on this thread (a step's own products may use more).
  void run_steps() {
    for (int64_t s = 0; s < p_.seq; ++s) {
      // Rows past the last sequence still running stay out of the products:
      // with sorted lengths (as packed sequences have) the work shrinks.
      int64_t rows = p_.batch;
      if (p_.lengths != nullptr) {
        rows = 0;
        for (int64_t b = 0; b < p_.batch; ++b)
          if (p_.lengths[b] > s) rows = b + 1;
      }
      if (rows == 0) break;
      step(s, rows);
    }
  }

  // The threads that share a batch of one's steps by unit blocks: 1 when
  // the steps are too small to pay for a barrier each.
  int split_threads() const {
    if (!unit_blocks_ || p_.batch != 1 || gh_ * hidden_ < kSplitStepMacs) return 1;
    return static_cast<int>(std::min<int64_t>(available_threads(), p_.w.blocks));
  }

  // A batch of one on several threads: each owns some unit blocks, their
  // share of every step's product and their gates, through the sequence in
  // one parallel region with a barrier a step (a region a step costs more
  // than a small step). h alternates between two buffers, since the threads
  // read the whole of one step's h while they write their units of the next.
  void run_split(int threads) {
    if constexpr (std::is_same_v<C, float>) {
      const int64_t len = length(0), H = hidden_;
      const int64_t panels_per_block = gate_count(cfg_.cell) * kUnitBlock / PackedColumns<C>::kWidth;
      C* const h_other = scratch_;
#pragma omp parallel num_threads(threads)
      {
        const int64_t t = omp_get_thread_num(), n = omp_get_num_threads(), blocks = p_.w.blocks;
        const int64_t first = blocks * t / n, last = blocks * (t + 1) / n;
        const int64_t u0 = first * kUnitBlock, u1 = std::min(H, last * kUnitBlock);
        C* h_in = h_;
        C* h_out = h_other;
        for (int64_t s = 0; s < len; ++s) {
          const int64_t time = backward_ ? len - 1 - s : s;
          packed_panels(1, h_in, H, recurrent_[0], gates_, gh_, first * panels_per_block, last * panels_per_block, s % 2 == 1);
          fused_blocks(first, last, projected(time, 0), h_in, h_out);
          if (p_.y != nullptr) std::copy(h_out + u0, h_out + u1, p_.y + y_offset(time, 0) + u0);
#pragma omp barrier
          std::swap(h_in, h_out);
        }
      }
      if (len % 2 == 1) std::copy_n(h_other, H, h_);
    }
  }

  // The fused gates of unit blocks [first, last) of row 0 after a product in
  // unit blocks: h_in is the step's h, the new one goes to h_out (c in place).
  void fused_blocks(int64_t first, int64_t last, const C* x, const C* h_in, C* h_out) {
    if constexpr (std::is_same_v<C, float>) {
      const int64_t H = hidden_, gates = gate_count(cfg_.cell);
      for (int64_t k = first; k < last; ++k) {
        const int64_t u = k * kUnitBlock, units = std::min(kUnitBlock, H - u);
        const C* g = gates_ + k * gates * kUnitBlock;
        if (cfg_.cell == Cell::lstm) {
          lstm_default_gates(units, g, kUnitBlock, x + u, H, clip_bound(), c_ + u, h_out + u);
        } else {
          gru_default_gates(units, g, kUnitBlock, x + u, H, reset_bias_ + u, clip_bound(), h_in + u, h_out + u);
        }
      }
    }
  }

  void step(int64_t s, int64_t rows) {
    const int64_t H = hidden_;
    const bool split = cfg_.split_product();
    // h * R^T for all gates, or for z and r only when the hidden gate needs
    // the reset applied to h first.
    recurrent_product(rows, 0, h_, gates_, s % 2 == 1);
    // One row through the packed product: its columns are in unit blocks.
    if (unit_blocks_ && rows <= kPackedRows) {
      for_rows(s, rows, true, [&](int64_t, const C* x) { fused_blocks(0, p_.w.blocks, x, h_, h_); });
      return;
    }
    switch (cfg_.cell) {
      case Cell::lstm: for_rows(s, rows, true, [&](int64_t b, const C* x) { lstm_row(b, x); }); break;
      case Cell::rnn: for_rows(s, rows, true, [&](int64_t b, const C* x) { rnn_row(b, x); }); break;
      case Cell::gru:
        if (!split) {
          for_rows(s, rows, true, [&](int64_t b, const C* x) { gru_row(b, x); });
        } else {
          for_rows(s, rows, false, [&](int64_t b, const C* x) { gru_update_reset(b, x); });
          recurrent_product(rows, 1, scratch_, gates_ + 2 * H, s % 2 == 1);
          for_rows(s, rows, true, [&](int64_t b, const C* x) { gru_hidden(b, x); });
        }
        break;
    }
  }

  // out = a * (R^T's columns of `product`) for `rows` rows of a (hidden
  // apart) into rows of out (gates * hidden apart).
  void recurrent_product(int64_t rows, int product, const C* a, C* out, bool backwards) const {
    const PackedColumns<C>& packed = recurrent_[product];
    if (rows <= kPackedRows) return packed_product(rows, a, hidden_, packed, out, gh_, backwards);
    // R^T's columns as they are: the gates' order, not unit blocks.
    const int64_t first = product == 0 ? 0 : 2 * hidden_;
    const int64_t columns = product == 0 ? (cfg_.split_product() ? 2 * hidden_ : gh_) : hidden_;
    gemm(false, false, rows, columns, hidden_, C(1), a, hidden_, r_t_ + first, gh_, C(0), out, gh_);
  }

  // Gates i, o, f, c (the spec's order), with peepholes P = (Pi, Po, Pf).
  void lstm_row(int64_t b, const C* x) {
    const int64_t H = hidden_;
    C* g = gates_ + b * gh_;
    C* gi = g;
    C* go = g + H;
    C* gf = g + 2 * H;
    C* gc = g + 3 * H;
    C* c = c_ + b * H;
    C* h = h_ + b * H;
    if constexpr (std::is_same_v<C, float>) {
      if (fused_) return lstm_default_gates(H, g, H, x, H, clip_bound(), c, h);
    }
    for (int64_t j = 0; j < gh_; ++j) g[j] += x[j];
    if (peephole_ != nullptr) {
      const C* pi = peephole_;
      const C* pf = peephole_ + 2 * H;
      for (int64_t j = 0; j < H; ++j) {
        gi[j] += pi[j] * c[j];
        gf[j] += pf[j] * c[j];
      }
    }
    clip(gi, H);
    act_[0].apply(gi, H);
    if (cfg_.input_forget) {
      for (int64_t j = 0; j < H; ++j) gf[j] = C(1) - gi[j];
    } else {
      clip(gf, H);
      act_[0].apply(gf, H);
    }
    clip(gc, H);
    act_[1].apply(gc, H);
    for (int64_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
    if (peephole_ != nullptr) {
      const C* po = peephole_ + H;
      for (int64_t j = 0; j < H; ++j) go[j] += po[j] * c[j];
    }
    clip(go, H);
    act_[0].apply(go, H);
    C* hc = scratch_ + b * H;  // h(C)
    std::copy_n(c, H, hc);
    act_[2].apply(hc, H);
    for (int64_t j = 0; j < H; ++j) h[j] = go[j] * hc[j];
  }

  // Gates z, r, h under linear_before_reset: h~ = g(x Wh + Wbh + r (h Rh^T + Rbh)).
  void gru_row(int64_t b, const C* x) {
    const int64_t H = hidden_;
    C* g = gates_ + b * gh_;
    if constexpr (std::is_same_v<C, float>) {
      if (fused_) return gru_default_gates(H, g, H, x, H, reset_bias_, clip_bound(), h_ + b * H, h_ + b * H);
    }
    const C* gr = g + H;
    C* gh = g + 2 * H;
    gru_gates_zr(b, x);
    for (int64_t j = 0; j < H; ++j) gh[j] = x[2 * H + j] + gr[j] * (gh[j] + reset_bias_[j]);
    gru_blend(b);
  }

  // Without linear_before_reset, first z and r, and r * h for the product
  // with Rh that follows...
  void gru_update_reset(int64_t b, const C* x) {
    const int64_t H = hidden_;
    C* g = gates_ + b * gh_;
    const C* gr = g + H;
    const C* h = h_ + b * H;
    C* rh = scratch_ + b * H;
    gru_gates_zr(b, x);
    for (int64_t j = 0; j < H; ++j) rh[j] = gr[j] * h[j];
  }

  // ...then h~ = g(x Wh + (r h) Rh^T + Wbh + Rbh) and the new h.
  void gru_hidden(int64_t b, const C* x) {
    const int64_t H = hidden_;
    C* gh = gates_ + b * gh_ + 2 * H;
    for (int64_t j = 0; j < H; ++j) gh[j] += x[2 * H + j];
    gru_blend(b);
  }

  // Both GRU forms: z and r from their pre-activations in g[0, 2H) ...
  void gru_gates_zr(int64_t b, const C* x) {
    const int64_t H = hidden_;
    C* g = gates_ + b * gh_;
    for (int64_t j = 0; j < 2 * H; ++j) g[j] += x[j];
    clip(g, 2 * H);
    act_[0].apply(g, 2 * H);
  }

  // ... and, once h~'s pre-activation is in g[2H, 3H), h = (1 - z) h~ + z h.
  void gru_blend(int64_t b) {
    const int64_t H = hidden_;
    const C* gz = gates_ + b * gh_;
    C* gh = gates_ + b * gh_ + 2 * H;
    C* h = h_ + b * H;
    clip(gh, H);
    act_[1].apply(gh, H);
    for (int64_t j = 0; j < H; ++j) h[j] = (C(1) - gz[j]) * gh[j] + gz[j] * h[j];
  }

  void rnn_row(int64_t b, const C* x) {
    const int64_t H = hidden_;
    C* g = gates_ + b * gh_;
    for (int64_t j = 0; j < H; ++j) g[j] += x[j];
    clip(g, H);
    act_[0].apply(g, H);
    std::copy_n(g, H, h_ + b * H);
  }

  const Problem<C>& p_;
  const Config& cfg_;
  const int64_t d_, hidden_, gh_;
  const bool backward_;
  const Activation* act_;
  const PackedColumns<C>* recurrent_;
  const C* r_t_;
  const C* reset_bias_;
  const C* peephole_;
  const C* xp_;
  const int64_t xp_ld_;
  C* h_;
  C* c_;
  C* gates_;
  C* scratch_;
  const bool fused_;        // float, and Config::fused_gates
  const bool unit_blocks_;  // the packed product's columns are in unit blocks (Weights::unit_blocks)
};

// xp = X * W^T + B, the input's part of the gates of every step and
// direction: `rows` rows of [directions * gates * hidden].
template <class C> Status project_input(const Problem<C>& p, int64_t rows, C* xp) {
  const int64_t n = p.cfg.directions * gate_count(p.cfg.cell) * p.w.hidden, k = p.w.input;
  if constexpr (std::is_same_v<C, float>) {
    if (p.w.w_packed != nullptr) {
      ONNXKIT_ASSIGN(const bool done, p.w.w_packed->run(rows, p.x, p.w.bias.data(), xp));
      if (done) return {};
    }
  }
  for (int64_t i = 0; i < rows; ++i) std::copy_n(p.w.bias.data(), n, xp + i * n);
  gemm(false, true, rows, n, k, C(1), p.x, k, p.w.w, k, C(1), xp, n);
  return {};
}

template <class C> Status run_problem(const Problem<C>& p) {
  const Config& cfg = p.cfg;
  const int64_t dirs = cfg.directions, gh = gate_count(cfg.cell) * p.w.hidden, H = p.w.hidden;
  const int64_t rows = p.seq * p.batch, B = p.batch;
  const bool lstm = cfg.cell == Cell::lstm;
  // One allocation per run: the projected input of every step and direction
  // (filled by one product), then each direction's state and scratch,
  // zeroed (rows that stopped early go on through the products).
  // A row of the product in unit blocks is padded to whole blocks.
  const int64_t gate_space = std::max(B * gh, p.w.unit_blocks ? p.w.blocks * gate_count(cfg.cell) * kUnitBlock : 0);
  const int64_t projected = rows * dirs * gh, per_direction = B * (H + (lstm ? H : 0) + H) + gate_space;
  const std::unique_ptr<C[]> buffer(new C[static_cast<size_t>(projected + dirs * per_direction)]);
  C* xp = buffer.get();
  ONNXKIT_TRY(project_input(p, rows, xp));
  if (p.y != nullptr && p.lengths != nullptr) std::fill_n(p.y, p.seq * dirs * p.batch * H, C(0));
  std::fill_n(xp + projected, dirs * per_direction, C(0));
  DirectionState<C> states[2];
  for (int64_t d = 0; d < dirs; ++d) {
    C* next = xp + projected + d * per_direction;
    DirectionState<C>& st = states[d];
    st.h = next;
    next += B * H;
    st.c = lstm ? next : nullptr;
    next += lstm ? B * H : 0;
    st.gates = next;
    st.scratch = next + gate_space;
  }
  // The two directions are independent: on two threads each runs its own
  // products, instead of both sharing threads step by step.
  parallel_for(dirs, p.seq * p.batch * gh * H >= (1 << 16), [&](int64_t d) { DirectionRun<C>(p, d, xp, states[d]).run(); });
  return {};
}

// The number of elements of a buffer of these dims, or an error naming it.
Result<int64_t> checked_count(std::initializer_list<int64_t> dims, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return make_error("{} would have a negative size", what);
    if (d != 0 && n > kMaxElements / d) return make_error("{} would be too large", what);
    n *= d;
  }
  for (int64_t d : dims)
    if (d == 0) return int64_t{0};
  return n;
}

// Where an output's values are computed: the tensor itself when it has the
// compute type, else `scratch`, converted into the tensor afterwards.
template <class C> C* output_buffer(Tensor* t, std::vector<C>& scratch) {
  if (t == nullptr) return nullptr;
  if (t->dtype() == data_type_of<C>()) return t->mutable_data<C>();
  scratch.resize(static_cast<size_t>(t->numel()));
  return scratch.data();
}

template <class C> void store_output(Tensor* t, const std::vector<C>& scratch) {
  if (t == nullptr || t->dtype() == data_type_of<C>()) return;
  (void)dispatch_float(t->dtype(), [&]<class T>() -> Status {
    T* out = t->mutable_data<T>();
    for (size_t i = 0; i < scratch.size(); ++i) out[i] = static_cast<T>(scratch[i]);
    return {};
  });
}

struct Prepacked {
  std::shared_ptr<const Weights<float>> f;
  std::shared_ptr<const Weights<double>> d;
  const Weights<float>* get(float*) const { return f.get(); }
  const Weights<double>* get(double*) const { return d.get(); }
};

template <class C> Status compute_as(KernelContext& ctx, const Config& cfg, const Prepacked& packed) {
  const Tensor& x = ctx.input(kX);
  const DataType type = x.dtype();
  const bool lstm = cfg.cell == Cell::lstm;
  ONNXKIT_ASSIGN(const Tensor* wt, ctx.tensor(kW));
  ONNXKIT_ASSIGN(const Tensor* rt, ctx.tensor(kR));
  if (wt->dtype() != type)
    return make_error("W has element type {} and X has {}; they must match", to_string(wt->dtype()), to_string(type));
  std::shared_ptr<const Weights<C>> owned;
  const Weights<C>* w = packed.get(static_cast<C*>(nullptr));
  if (w == nullptr) {
    const Tensor* b = nullptr;
    const Tensor* p = nullptr;
    if (ctx.has_input(kB)) {
      ONNXKIT_ASSIGN(b, ctx.tensor(kB));
    }
    if (lstm && ctx.has_input(kPeephole)) {
      ONNXKIT_ASSIGN(p, ctx.tensor(kPeephole));
    }
    ONNXKIT_ASSIGN(owned, make_weights<C>(cfg, *wt, *rt, b, p, false));
    w = owned.get();
  }
  const int64_t dirs = cfg.directions, H = w->hidden;
  const char* layout =
      cfg.batch_first ? "[batch_size, seq_length, input_size] (layout 1)" : "[seq_length, batch_size, input_size]";
  if (x.rank() != 3) return make_error("X must be 3-D {}, got shape {}", layout, shape_to_string(x.shape()));
  const int64_t seq = cfg.batch_first ? x.dim(1) : x.dim(0);
  const int64_t batch = cfg.batch_first ? x.dim(0) : x.dim(1);
  if (x.dim(2) != w->input)
    return make_error("X has shape {}, input_size {}; W has shape {}, input_size {}: they must match", shape_to_string(x.shape()),
                      x.dim(2), shape_to_string(wt->shape()), w->input);

  std::vector<int64_t> lengths;
  if (ctx.has_input(kSequenceLens)) {
    ONNXKIT_ASSIGN(const Tensor* sl, ctx.tensor(kSequenceLens));
    if (sl->dtype() != DataType::int32 && sl->dtype() != DataType::int64)
      return make_error("sequence_lens has element type {}; it must be int32", to_string(sl->dtype()));
    if (sl->rank() != 1 || sl->dim(0) != batch)
      return make_error("sequence_lens has shape {}; it must be [batch_size] = [{}]", shape_to_string(sl->shape()), batch);
    ONNXKIT_ASSIGN(lengths, read_int64s(*sl));
    for (size_t b = 0; b < lengths.size(); ++b)
      if (lengths[b] < 0 || lengths[b] > seq)
        return make_error("sequence_lens[{}] is {}, outside [0, {}] (the seq_length of X {})", b, lengths[b], seq,
                          shape_to_string(x.shape()));
  }

  const Shape state_shape = cfg.batch_first ? Shape{batch, dirs, H} : Shape{dirs, batch, H};
  const char* state_layout =
      cfg.batch_first ? "[batch_size, num_directions, hidden_size] (layout 1)" : "[num_directions, batch_size, hidden_size]";
  auto initial_state = [&](size_t index, const char* name, std::vector<C>& copy) -> Result<const C*> {
    if (!ctx.has_input(index)) return static_cast<const C*>(nullptr);
    ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(index));
    if (t->dtype() != type)
      return make_error("{} has element type {} and X has {}; they must match", name, to_string(t->dtype()), to_string(type));
    if (t->shape() != state_shape)
      return make_error("{} has shape {}; it must be {} = {}", name, shape_to_string(t->shape()), state_layout,
                        shape_to_string(state_shape));
    return as_compute(*t, copy);
  };
  std::vector<C> x_copy, h0_copy, c0_copy;
  ONNXKIT_ASSIGN(const C* h0, initial_state(kInitialH, "initial_h", h0_copy));
  const C* c0 = nullptr;
  if (lstm) {
    ONNXKIT_ASSIGN(c0, initial_state(kInitialC, "initial_c", c0_copy));
  }

  ONNXKIT_TRY(checked_count({seq, batch, dirs, gate_count(cfg.cell), H}, "the projected input (X * W^T)"));
  const Shape y_shape = cfg.batch_first ? Shape{batch, seq, dirs, H} : Shape{seq, dirs, batch, H};
  Tensor* y = ctx.wants_output(0) ? &ctx.output(0, type, y_shape) : nullptr;
  Tensor* yh = ctx.wants_output(1) ? &ctx.output(1, type, state_shape) : nullptr;
  Tensor* yc = lstm && ctx.wants_output(2) ? &ctx.output(2, type, state_shape) : nullptr;
  std::vector<C> y_copy, yh_copy, yc_copy;
  Problem<C> problem{cfg, *w};
  problem.seq = seq;
  problem.batch = batch;
  problem.x = as_compute(x, x_copy);
  problem.h0 = h0;
  problem.c0 = c0;
  problem.lengths = lengths.empty() ? nullptr : lengths.data();
  problem.y = output_buffer(y, y_copy);
  problem.yh = output_buffer(yh, yh_copy);
  problem.yc = output_buffer(yc, yc_copy);
  ONNXKIT_TRY(run_problem(problem));
  store_output(y, y_copy);
  store_output(yh, yh_copy);
  store_output(yc, yc_copy);
  return {};
}

Status compute(KernelContext& ctx, const Config& cfg, const Prepacked& packed) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(kX));
  if (!is_floating(x->dtype()))
    return make_error("X has element type {}; {} takes float16, bfloat16, float or double", to_string(x->dtype()),
                      op_name(cfg.cell));
  if (x->dtype() == DataType::float64) return compute_as<double>(ctx, cfg, packed);
  return compute_as<float>(ctx, cfg, packed);
}

KernelFactory recurrent_kernel(Cell cell) {
  return make_kernel([cell](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(Config cfg, read_config(info, cell));
    // Weights that are initializers are checked and converted once, here.
    auto packed = std::make_shared<Prepacked>();
    const Tensor* w = info.constant_input(kW);
    const Tensor* r = info.constant_input(kR);
    const Tensor* b = info.has_input(kB) ? info.constant_input(kB) : nullptr;
    const bool has_p = cell == Cell::lstm && info.has_input(kPeephole);
    const Tensor* p = has_p ? info.constant_input(kPeephole) : nullptr;
    if (w != nullptr && r != nullptr && (b != nullptr || !info.has_input(kB)) && (p != nullptr || !has_p)) {
      if (w->dtype() == DataType::float64) {
        ONNXKIT_ASSIGN(packed->d, make_weights<double>(cfg, *w, *r, b, p, true));
      } else {
        ONNXKIT_ASSIGN(packed->f, make_weights<float>(cfg, *w, *r, b, p, true));
      }
    }
    return ComputeFn([cfg, packed](KernelContext& ctx) -> Status {
      // Buffers sized from the inputs may still be too large for memory.
      try {
        return compute(ctx, cfg, *packed);
      } catch (const std::bad_alloc&) {
        return make_error("out of memory for the buffers of this sequence");
      } catch (const std::length_error&) {
        return make_error("the buffers of this sequence are too large to allocate");
      }
    });
  });
}

}  // namespace

void register_recurrent(KernelRegistry& registry) {
  for (Cell cell : {Cell::lstm, Cell::gru, Cell::rnn}) {
    // Opset 14 added `layout`; 22 only widened the element types.
    registry.add("", op_name(cell), 7, 13, recurrent_kernel(cell));
    registry.add("", op_name(cell), 14, kLatestOpset, recurrent_kernel(cell));
  }
}

}  // namespace onnxkit::runtime::rnn
