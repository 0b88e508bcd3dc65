// LSTM, GRU and RNN against a naive double-precision loop written here from
// the equations of the ONNX operator specs, one time step and one sequence at
// a time: directions, short sequence_lens, clip, input_forget,
// linear_before_reset, layout = 1, peepholes, initial states and activations.
//
// Where the spec leaves a choice open the loop takes ONNX Runtime's: `clip`
// bounds the inputs of the gate activations f and g (not the cell state fed
// to h), input_forget makes the forget gate 1 - i, and Y is zero past the end
// of a short sequence.

#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/kernels/gemm.h"
#include "runtime/kernels/rnn/recurrent_product.h"
#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Shape;
using runtime::Tensor;
using testing::attr;
using testing::random_tensor;

enum class Cell { lstm, gru, rnn };

struct RnnCase {
  Cell cell = Cell::lstm;
  std::string direction = "forward";
  int64_t seq = 4, batch = 3, input = 5, hidden = 4;
  std::vector<int32_t> lengths;      // sequence_lens; empty: absent
  float clip = 0;                    // 0: absent
  bool input_forget = false;         // LSTM
  bool linear_before_reset = false;  // GRU
  bool batch_first = false;          // layout = 1
  bool bias = true;
  bool peepholes = false;                // LSTM
  bool initial_states = false;           // initial_h (and initial_c for LSTM)
  bool constant_weights = true;          // W, R, B and P as initializers (read once) or fed on each run
  std::vector<std::string> activations;  // empty: the defaults, else the attribute
  int threads = 1;
  bool in_double = false;  // every input (and so every output) float64 instead of float32
};

const char* op_name(Cell cell) { return cell == Cell::lstm ? "LSTM" : cell == Cell::gru ? "GRU" : "RNN"; }
int64_t gate_count(Cell cell) { return cell == Cell::lstm ? 4 : cell == Cell::gru ? 3 : 1; }

double activation(const std::string& name, double x) {
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::max(x, 0.0);
  ADD_FAILURE() << "the reference knows no activation " << name;
  return 0;
}

// The inputs of one case, drawn once; tensors in the case's layout.
struct Inputs {
  Tensor x, w, r, b, p, h0, c0;
};

Inputs draw_inputs(const RnnCase& c) {
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, g = gate_count(c.cell), h = c.hidden;
  Inputs in;
  in.x = random_tensor(c.batch_first ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input}, 1);
  in.w = random_tensor({dirs, g * h, c.input}, 2);
  in.r = random_tensor({dirs, g * h, h}, 3);
  in.b = random_tensor({dirs, 2 * g * h}, 4);
  in.p = random_tensor({dirs, 3 * h}, 5);
  const Shape state = c.batch_first ? Shape{c.batch, dirs, h} : Shape{dirs, c.batch, h};
  in.h0 = random_tensor(state, 6);
  in.c0 = random_tensor(state, 7);
  return in;
}

// What the node should output, in the case's layout.
struct Expected {
  Tensor y, y_h, y_c;
};

// The spec's equations, with W, R, Wb, Rb and P split by gate: gates i, o,
// f, c (LSTM), z, r, h (GRU), i (RNN) in that order along axis 1 of W and R;
// B is [Wb, Rb]; P is (Pi, Po, Pf).
Expected reference(const RnnCase& c, const Inputs& in) {
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, g = gate_count(c.cell), H = c.hidden;
  const int64_t S = c.seq, N = c.batch, I = c.input;
  const float* X = in.x.data<float>();
  const float* W = in.w.data<float>();
  const float* R = in.r.data<float>();
  const float* B = in.b.data<float>();
  const float* P = in.p.data<float>();
  auto x_at = [&](int64_t t, int64_t b, int64_t i) -> double { return X[(c.batch_first ? b * S + t : t * N + b) * I + i]; };
  auto state_index = [&](int64_t d, int64_t b, int64_t j) { return (c.batch_first ? b * dirs + d : d * N + b) * H + j; };
  auto y_index = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return (c.batch_first ? (b * S + t) * dirs + d : (t * dirs + d) * N + b) * H + j;
  };
  const Shape state_shape = c.batch_first ? Shape{N, dirs, H} : Shape{dirs, N, H};
  Expected out{Tensor(DataType::float32, c.batch_first ? Shape{N, S, dirs, H} : Shape{S, dirs, N, H}),
               Tensor(DataType::float32, state_shape), Tensor(DataType::float32, state_shape)};
  std::fill_n(out.y.mutable_data<float>(), out.y.numel(), 0.0f);

  std::vector<std::string> defaults = c.cell == Cell::lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : c.cell == Cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                            : std::vector<std::string>{"Tanh"};
  const size_t per_direction = defaults.size();
  const std::vector<std::string> given = c.activations.empty() ? defaults : c.activations;
  std::vector<std::string> names = given;  // one list serves both directions
  if (given.size() == per_direction && dirs == 2) names.insert(names.end(), given.begin(), given.end());
  auto clip = [&](double v) { return c.clip > 0 ? std::clamp(v, -double{c.clip}, double{c.clip}) : v; };

  for (int64_t d = 0; d < dirs; ++d) {
    const bool backward = c.direction == "reverse" || d == 1;
    auto f = [&](double v) { return activation(names[d * per_direction], clip(v)); };
    auto gf = [&](double v) { return activation(names[d * per_direction + 1], clip(v)); };
    auto hf = [&](double v) { return activation(names[d * per_direction + 2], v); };
    // Element j of gate k's two terms, x W_k^T + Wb_k and h R_k^T + Rb_k:
    // apart, since GRU's hidden gate applies the reset to h or to the latter.
    auto w_term = [&](int64_t t, int64_t b, int64_t k, int64_t j) {
      double sum = c.bias ? double{B[(d * 2 * g) * H + k * H + j]} : 0.0;
      for (int64_t i = 0; i < I; ++i) sum += x_at(t, b, i) * W[((d * g + k) * H + j) * I + i];
      return sum;
    };
    auto r_term = [&](const std::vector<double>& h, int64_t k, int64_t j) {
      double sum = c.bias ? double{B[(d * 2 * g + g) * H + k * H + j]} : 0.0;
      for (int64_t m = 0; m < H; ++m) sum += h[m] * R[((d * g + k) * H + j) * H + m];
      return sum;
    };
    auto peephole = [&](int64_t k, int64_t j) { return c.peepholes ? double{P[d * 3 * H + k * H + j]} : 0.0; };

    for (int64_t b = 0; b < N; ++b) {
      std::vector<double> h(H, 0.0), cell(H, 0.0);
      if (c.initial_states)
        for (int64_t j = 0; j < H; ++j) {
          h[j] = in.h0.data<float>()[state_index(d, b, j)];
          cell[j] = in.c0.data<float>()[state_index(d, b, j)];
        }
      const int64_t length = c.lengths.empty() ? S : c.lengths[b];
      for (int64_t s = 0; s < length; ++s) {
        const int64_t t = backward ? length - 1 - s : s;
        std::vector<double> next(H);
        switch (c.cell) {
          case Cell::lstm:
            for (int64_t j = 0; j < H; ++j) {
              const double i_gate = f(w_term(t, b, 0, j) + r_term(h, 0, j) + peephole(0, j) * cell[j]);
              const double f_gate =
                  c.input_forget ? 1 - i_gate : f(w_term(t, b, 2, j) + r_term(h, 2, j) + peephole(2, j) * cell[j]);
              const double candidate = gf(w_term(t, b, 3, j) + r_term(h, 3, j));
              const double new_cell = f_gate * cell[j] + i_gate * candidate;
              const double o_gate = f(w_term(t, b, 1, j) + r_term(h, 1, j) + peephole(1, j) * new_cell);
              next[j] = o_gate * hf(new_cell);
              cell[j] = new_cell;
            }
            break;
          case Cell::gru: {
            std::vector<double> z(H), r(H), reset_h(H);
            for (int64_t j = 0; j < H; ++j) {
              z[j] = f(w_term(t, b, 0, j) + r_term(h, 0, j));
              r[j] = f(w_term(t, b, 1, j) + r_term(h, 1, j));
              reset_h[j] = r[j] * h[j];
            }
            for (int64_t j = 0; j < H; ++j) {
              // linear_before_reset: r (.) (h Rh^T + Rbh); else (r (.) h) Rh^T + Rbh.
              const double recurrent = c.linear_before_reset ? r[j] * r_term(h, 2, j) : r_term(reset_h, 2, j);
              const double candidate = gf(w_term(t, b, 2, j) + recurrent);
              next[j] = (1 - z[j]) * candidate + z[j] * h[j];
            }
            break;
          }
          case Cell::rnn:
            for (int64_t j = 0; j < H; ++j) next[j] = f(w_term(t, b, 0, j) + r_term(h, 0, j));
            break;
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) out.y.mutable_data<float>()[y_index(t, d, b, j)] = static_cast<float>(h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        out.y_h.mutable_data<float>()[state_index(d, b, j)] = static_cast<float>(h[j]);
        out.y_c.mutable_data<float>()[state_index(d, b, j)] = static_cast<float>(cell[j]);
      }
    }
  }
  return out;
}

// `t` (float32 or float64) with its values in `type`.
Tensor converted(const Tensor& t, DataType type) {
  Tensor out(type, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.dtype() == DataType::float64 ? t.data<double>()[i] : t.data<float>()[i];
    if (type == DataType::float64) out.mutable_data<double>()[i] = v;
    else out.mutable_data<float>()[i] = static_cast<float>(v);
  }
  return out;
}

testing::NodeSpec node_of(const RnnCase& c, const Inputs& drawn) {
  testing::NodeSpec spec{.op_type = op_name(c.cell)};
  const bool lstm = c.cell == Cell::lstm;
  Inputs in = drawn;
  if (c.in_double)
    for (Tensor* t : {&in.x, &in.w, &in.r, &in.b, &in.p, &in.h0, &in.c0}) *t = converted(*t, DataType::float64);
  auto weight = [&](const char* name, const Tensor& t) { return testing::NodeInput{name, t, c.constant_weights}; };
  spec.inputs = {{"x", in.x}, weight("w", in.w), weight("r", in.r)};
  spec.inputs.push_back(c.bias ? weight("b", in.b) : testing::NodeInput{});
  if (c.lengths.empty()) spec.inputs.push_back({});
  else spec.inputs.push_back({"sequence_lens", Tensor::from<int32_t>({c.batch}, c.lengths)});
  spec.inputs.push_back(c.initial_states ? testing::NodeInput{"initial_h", in.h0} : testing::NodeInput{});
  if (lstm) {
    spec.inputs.push_back(c.initial_states ? testing::NodeInput{"initial_c", in.c0} : testing::NodeInput{});
    spec.inputs.push_back(c.peepholes ? weight("p", in.p) : testing::NodeInput{});
  }
  while (spec.inputs.back().name.empty()) spec.inputs.pop_back();
  spec.attributes = {attr("hidden_size", c.hidden), attr("direction", c.direction)};
  if (c.clip > 0) spec.attributes.push_back(attr("clip", c.clip));
  if (c.input_forget) spec.attributes.push_back(attr("input_forget", 1));
  if (c.linear_before_reset) spec.attributes.push_back(attr("linear_before_reset", 1));
  if (c.batch_first) spec.attributes.push_back(attr("layout", 1));
  if (!c.activations.empty()) spec.attributes.push_back(attr("activations", c.activations));
  spec.num_outputs = lstm ? 3 : 2;
  spec.threads = c.threads;
  return spec;
}

void expect_matches_reference(const RnnCase& c, const std::string& label) {
  SCOPED_TRACE(std::string(op_name(c.cell)) + ": " + label);
  const Inputs in = draw_inputs(c);
  const Expected expected = reference(c, in);
  auto out = testing::run_node(node_of(c, in));
  ASSERT_EQ(out.size(), c.cell == Cell::lstm ? 3u : 2u);
  const Tensor* want[] = {&expected.y, &expected.y_h, &expected.y_c};
  const char* names[] = {"Y", "Y_h", "Y_c"};
  for (size_t i = 0; i < out.size(); ++i) {
    SCOPED_TRACE(names[i]);
    const Tensor& got = out[i].tensor();
    ASSERT_EQ(got.dtype(), c.in_double ? DataType::float64 : DataType::float32);
    testing::expect_tensor_near(converted(got, DataType::float32), *want[i], 1e-5, 1e-4);
  }
}

using Cases = std::vector<std::pair<std::string, RnnCase>>;

// Adds the plain forward case of `cell` as `change` alters it.
template <class Change> void add_case(Cases& cases, Cell cell, std::string label, Change change) {
  RnnCase c;
  c.cell = cell;
  change(c);
  cases.emplace_back(std::move(label), c);
}

// The cases every cell runs, each changing one thing from the plain forward
// case (and a few together): the spec's attributes one by one.
Cases common_cases(Cell cell) {
  Cases cases;
  auto add = [&](std::string label, auto change) { add_case(cases, cell, std::move(label), change); };
  add("forward", [](RnnCase&) {});
  add("weights fed at run time, no bias", [](RnnCase& c) {
    c.constant_weights = false;
    c.bias = false;
  });
  add("initial states", [](RnnCase& c) { c.initial_states = true; });
  add("reverse", [](RnnCase& c) { c.direction = "reverse"; });
  add("bidirectional with initial states", [](RnnCase& c) {
    c.direction = "bidirectional";
    c.initial_states = true;
  });
  add("reverse with short sequence_lens", [](RnnCase& c) {
    c.direction = "reverse";
    c.lengths = {2, 4, 1};
  });
  add("bidirectional with short sequence_lens", [](RnnCase& c) {
    c.direction = "bidirectional";
    c.lengths = {3, 1, 4};
    c.initial_states = true;
  });
  add("clip", [](RnnCase& c) {
    c.clip = 0.5f;
    c.initial_states = true;
  });
  add("layout 1", [](RnnCase& c) { c.batch_first = true; });
  add("layout 1, bidirectional, short sequence_lens, initial states", [](RnnCase& c) {
    c.batch_first = true;
    c.direction = "bidirectional";
    c.lengths = {4, 2, 3};
    c.initial_states = true;
  });
  // A batch of one or two takes the row-times-matrix product instead of a
  // GEMM: a hidden size off any vector width, and rows dropping out.
  add("batch 1, hidden 37", [](RnnCase& c) {
    c.batch = 1;
    c.seq = 5;
    c.input = 7;
    c.hidden = 37;
    c.initial_states = true;
  });
  add("batch 2, bidirectional, hidden 19, short sequence_lens", [](RnnCase& c) {
    c.batch = 2;
    c.seq = 5;
    c.hidden = 19;
    c.direction = "bidirectional";
    c.lengths = {5, 2};
  });
  // Past a batch of one the steps multiply R^T with sgemm; a hidden size
  // whose gates end past a 32-float panel's edge for the packed product.
  add("batch 5, hidden 33, initial states", [](RnnCase& c) {
    c.batch = 5;
    c.hidden = 33;
    c.initial_states = true;
  });
  add("double, batch 4, hidden 21, bidirectional, initial states", [](RnnCase& c) {
    c.in_double = true;
    c.batch = 4;
    c.hidden = 21;
    c.direction = "bidirectional";
    c.initial_states = true;
  });
  // Large enough for the threads to share each step's product.
  add("batch 16, hidden 72, 2 threads", [](RnnCase& c) {
    c.batch = 16;
    c.hidden = 72;
    c.input = 9;
    c.threads = 2;
    c.lengths = std::vector<int32_t>(16, 4);
    c.lengths[3] = 2;
  });
  return cases;
}

TEST(RnnReference, Lstm) {
  auto cases = common_cases(Cell::lstm);
  auto add = [&](std::string label, auto change) { add_case(cases, Cell::lstm, std::move(label), change); };
  add("peepholes", [](RnnCase& c) {
    c.peepholes = true;
    c.initial_states = true;
  });
  add("input_forget", [](RnnCase& c) {
    c.input_forget = true;
    c.initial_states = true;
  });
  add("bidirectional, peepholes, input_forget, clip, fed weights", [](RnnCase& c) {
    c.direction = "bidirectional";
    c.peepholes = true;
    c.input_forget = true;
    c.clip = 0.75f;
    c.constant_weights = false;
    c.initial_states = true;
  });
  add("activations per direction", [](RnnCase& c) {
    c.direction = "bidirectional";
    c.activations = {"Sigmoid", "Tanh", "Relu", "Sigmoid", "Relu", "Tanh"};
  });
  // A batch of one with steps large enough for the threads to share them by
  // blocks of 32 hidden units (the last one part-filled): steps odd and even
  // in number, backwards, a sequence_lens short of X, three threads.
  add("batch 1, hidden 100, 2 threads, initial states", [](RnnCase& c) {
    c.batch = 1;
    c.seq = 5;
    c.hidden = 100;
    c.threads = 2;
    c.initial_states = true;
  });
  add("batch 1, hidden 100, 2 threads, reverse, clip, short sequence_lens", [](RnnCase& c) {
    c.batch = 1;
    c.seq = 6;
    c.hidden = 100;
    c.threads = 2;
    c.direction = "reverse";
    c.clip = 0.5f;
    c.lengths = {4};
  });
  add("batch 1, hidden 130, 3 threads, layout 1, fed weights", [](RnnCase& c) {
    c.batch = 1;
    c.seq = 3;
    c.hidden = 130;
    c.threads = 3;
    c.batch_first = true;
    c.constant_weights = false;
  });
  for (const auto& [label, c] : cases) expect_matches_reference(c, label);
}

TEST(RnnReference, Gru) {
  auto cases = common_cases(Cell::gru);
  auto add = [&](std::string label, auto change) { add_case(cases, Cell::gru, std::move(label), change); };
  add("linear_before_reset", [](RnnCase& c) {
    c.linear_before_reset = true;
    c.initial_states = true;
  });
  add("linear_before_reset, reverse, short sequence_lens, clip, fed weights", [](RnnCase& c) {
    c.linear_before_reset = true;
    c.direction = "reverse";
    c.lengths = {3, 4, 2};
    c.clip = 0.5f;
    c.constant_weights = false;
  });
  add("linear_before_reset, layout 1, bidirectional", [](RnnCase& c) {
    c.linear_before_reset = true;
    c.batch_first = true;
    c.direction = "bidirectional";
    c.initial_states = true;
  });
  add("activations", [](RnnCase& c) { c.activations = {"Sigmoid", "Relu"}; });
  // As for LSTM: a batch of one whose steps the threads share by unit blocks.
  add("linear_before_reset, batch 1, hidden 110, 2 threads, initial states", [](RnnCase& c) {
    c.linear_before_reset = true;
    c.batch = 1;
    c.seq = 5;
    c.hidden = 110;
    c.threads = 2;
    c.initial_states = true;
  });
  add("linear_before_reset, batch 1, hidden 110, 3 threads, reverse, short sequence_lens", [](RnnCase& c) {
    c.linear_before_reset = true;
    c.batch = 1;
    c.seq = 6;
    c.hidden = 110;
    c.threads = 3;
    c.direction = "reverse";
    c.lengths = {4};
  });
  for (const auto& [label, c] : cases) expect_matches_reference(c, label);
}

TEST(RnnReference, Rnn) {
  auto cases = common_cases(Cell::rnn);
  add_case(cases, Cell::rnn, "activations per direction", [](RnnCase& c) {
    c.direction = "bidirectional";
    c.activations = {"Relu", "Tanh"};
  });
  for (const auto& [label, c] : cases) expect_matches_reference(c, label);
}

// The step's product against the reference GEMM: R's rows become the packed
// columns. Several rows, depths odd and even (a row sums odd and even depths
// apart), column counts around a panel's width, both panel orders, one
// product the threads share; the vector path this CPU takes and the plain
// one of CPUs without AVX2.
template <class C> void expect_packed_product_matches_reference() {
  constexpr int64_t kWidth = runtime::rnn::PackedColumns<C>::kWidth;
  const C nan = std::numeric_limits<C>::quiet_NaN();
  struct Case {
    int64_t rows, depth, columns;
    int threads;
  };
  std::vector<Case> cases;
  for (int64_t rows : {1, 2, 3, 4, 5, 7})
    for (int64_t depth : {1, 2, 7, 64})
      for (int64_t columns : {int64_t{1}, kWidth - 1, kWidth, kWidth + 1, 3 * kWidth + 5})
        cases.push_back({rows, depth, columns, 1});
  // Past kParallelMacs (parallel.h) in both types, so that the threads share it.
  cases.push_back({16, 300, 5 * kWidth + 3, 2});
  for (const Case& c : cases)
    for (bool backwards : {false, true})
      for (bool portable : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "rows " << c.rows << " depth " << c.depth << " columns " << c.columns << " threads "
                                          << c.threads << (backwards ? " backwards" : "") << (portable ? " portable" : ""));
        // Leading dimensions wider than the matrices, so that stray reads or
        // writes show: the padding of `out` must stay NaN.
        const int64_t lda = c.depth + 3, ldr = c.depth + 2, ldo = c.columns + 4;
        std::vector<C> a(static_cast<size_t>(c.rows * lda)), r(static_cast<size_t>(c.columns * ldr));
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<C>(std::sin(0.37 * static_cast<double>(i)));
        for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<C>(std::cos(0.11 * static_cast<double>(i)));
        std::vector<C> out(static_cast<size_t>(c.rows * ldo), nan), expected(out.size(), nan);
        runtime::gemm_reference<C>(false, true, c.rows, c.columns, c.depth, C(1), a.data(), lda, r.data(), ldr, C(0),
                                   expected.data(), ldo);
        const runtime::rnn::PackedColumns<C> packed(r.data(), ldr, c.depth, c.columns);
        omp_set_num_threads(c.threads);
        if (portable) runtime::rnn::packed_product_portable(c.rows, a.data(), lda, packed, out.data(), ldo, backwards);
        else runtime::rnn::packed_product(c.rows, a.data(), lda, packed, out.data(), ldo, backwards);
        omp_set_num_threads(1);
        for (int64_t i = 0; i < c.rows; ++i)
          for (int64_t j = 0; j < ldo; ++j) {
            const C want = expected[static_cast<size_t>(i * ldo + j)], got = out[static_cast<size_t>(i * ldo + j)];
            if (j >= c.columns) {
              ASSERT_TRUE(std::isnan(got)) << "the padding of row " << i << " was written at column " << j;
            } else {
              ASSERT_NEAR(got, want, 1e-4 * (1 + std::abs(want))) << "row " << i << " column " << j;
            }
          }
      }
}

TEST(RnnPackedProduct, MatchesReferenceGemm) {
  expect_packed_product_matches_reference<float>();
  expect_packed_product_matches_reference<double>();
}

}  // namespace
}  // namespace onnxkit
