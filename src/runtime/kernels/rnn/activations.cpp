// The activation functions a recurrent cell may name, and how the
// activations, activation_alpha and activation_beta attributes map onto them.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <type_traits>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/rnn/rnn.h"

namespace onnxkit::runtime::rnn {
namespace {

struct Known {
  const char* name;
  Activation::Kind kind;
  bool takes_alpha, takes_beta;
  float alpha, beta;  // the defaults of the operator of the same name
};

constexpr Known kKnown[] = {
    {"Sigmoid", Activation::Kind::sigmoid, false, false, 0, 0},
    {"Tanh", Activation::Kind::tanh, false, false, 0, 0},
    {"Relu", Activation::Kind::relu, false, false, 0, 0},
    {"Affine", Activation::Kind::affine, true, true, 1.0f, 0.0f},
    {"LeakyRelu", Activation::Kind::leaky_relu, true, false, 0.01f, 0},
    {"ThresholdedRelu", Activation::Kind::thresholded_relu, true, false, 1.0f, 0},
    {"ScaledTanh", Activation::Kind::scaled_tanh, true, true, 1.0f, 1.0f},
    {"HardSigmoid", Activation::Kind::hard_sigmoid, true, true, 0.2f, 0.5f},
    {"Elu", Activation::Kind::elu, true, false, 1.0f, 0},
    {"Softsign", Activation::Kind::softsign, false, false, 0, 0},
    {"Softplus", Activation::Kind::softplus, false, false, 0, 0},
};

// Exporters disagree on capitals ("Tanh", "tanh"); the names are otherwise
// unambiguous.
bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

template <class T> void Activation::apply(T* x, int64_t n) const {
  const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
  // The default gates of every cell: in float, the vectorized forms, which a
  // step of a small LSTM otherwise spends most of its time in.
  if constexpr (std::is_same_v<T, float>) {
    if (kind == Kind::sigmoid) return sigmoid_floats(x, x, n);
    if (kind == Kind::tanh) return tanh_floats(x, x, n);
  }
  switch (kind) {
    case Kind::sigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = T(1) / (T(1) + std::exp(-x[i]));
      break;
    case Kind::tanh:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
    case Kind::relu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > T(0) ? x[i] : T(0);
      break;
    case Kind::affine:
      for (int64_t i = 0; i < n; ++i) x[i] = a * x[i] + b;
      break;
    case Kind::leaky_relu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] < T(0) ? a * x[i] : x[i];
      break;
    case Kind::thresholded_relu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > a ? x[i] : T(0);
      break;
    case Kind::scaled_tanh:
      for (int64_t i = 0; i < n; ++i) x[i] = a * std::tanh(b * x[i]);
      break;
    case Kind::hard_sigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(T(1), std::max(T(0), a * x[i] + b));
      break;
    case Kind::elu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] < T(0) ? a * std::expm1(x[i]) : x[i];
      break;
    case Kind::softsign:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (T(1) + std::abs(x[i]));
      break;
    case Kind::softplus:
      // log(1 + e^x) without overflowing e^x for large x.
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > T(0) ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
      break;
  }
}

template void Activation::apply<float>(float*, int64_t) const;
template void Activation::apply<double>(double*, int64_t) const;

Result<std::vector<Activation>> read_activations(const KernelInfo& info, const std::vector<std::string>& defaults,
                                                 int64_t num_directions) {
  const size_t per_direction = defaults.size();
  const size_t wanted = per_direction * static_cast<size_t>(num_directions);
  std::vector<std::string> names = info.attr_strings("activations");
  if (!info.has_attr("activations")) {
    for (int64_t d = 0; d < num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() != wanted && names.size() != per_direction) {
    return make_error("attribute 'activations' has {} entries; {} direction(s) need {}", names.size(), num_directions, wanted);
  }
  const std::vector<float> alphas = info.attr_floats("activation_alpha");
  const std::vector<float> betas = info.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    const Known* known = nullptr;
    for (const Known& k : kKnown)
      if (same_name(name, k.name)) known = &k;
    if (known == nullptr)
      return make_error(
          "attribute 'activations' names '{}'; the recurrent ops know Sigmoid, Tanh, Relu, Affine, LeakyRelu, "
          "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign and Softplus",
          name);
    Activation a{known->kind, known->alpha, known->beta};
    if (known->takes_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (known->takes_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    out.push_back(a);
  }
  if (out.size() < wanted) {  // one list for both directions
    const std::vector<Activation> first = out;
    out.insert(out.end(), first.begin(), first.end());
  }
  return out;
}

}  // namespace onnxkit::runtime::rnn
