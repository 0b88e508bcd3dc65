#pragma once
// The ai.onnx.ml family: the ops scikit-learn, LightGBM and XGBoost models
// are deployed with (skl2onnx, onnxmltools). Where the specification leaves
// a case open (a binary classifier given one score column, a tie between
// classes) the kernels do what ONNX Runtime does, since converters emit
// models for it and its outputs are what users compare against.

#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::ml {

inline constexpr std::string_view kDomain = "ai.onnx.ml";

// The post_transform attribute of the classifiers and regressors.
enum class PostTransform { none, softmax, logistic, softmax_zero, probit };
Result<PostTransform> parse_post_transform(const KernelInfo& info);

// Applies `t` to one row of scores in place.
void apply_post_transform(PostTransform t, double* scores, int64_t n);
double logistic(double x);
double probit(double p);  // sqrt(2) * erfinv(2p - 1)

// A float-list attribute that may also come as `<name>_as_tensor` (float or
// double); empty when neither is given.
Result<std::vector<double>> attr_doubles(const KernelInfo& info, std::string_view name);

// Input X of a classifier or regressor, [N, C] or [C] (one row), as rows.
struct Rows {
  int64_t n = 0;  // rows
  int64_t c = 0;  // features per row
};
Result<Rows> rows_of(const Tensor& x, std::string_view name = "X");

// X's elements as doubles, row-major (float, double, int32, int64 inputs).
Result<std::vector<double>> features_as_doubles(const Tensor& x);

// A classifier's outputs: Y, each row's label (int_labels[label[row]], or
// string_labels[...] when the classifier has string labels), and when the
// node asks for it Z, `scores` as float32 [rows, width].
void write_classifier_outputs(KernelContext& ctx, const std::vector<int64_t>& int_labels,
                              const std::vector<std::string>& string_labels, const std::vector<int64_t>& label,
                              const std::vector<double>& scores, int64_t width);

void register_tree_ensemble(KernelRegistry& registry);  // TreeEnsembleClassifier, TreeEnsembleRegressor, TreeEnsemble
void register_zipmap(KernelRegistry& registry);         // ZipMap
void register_linear(KernelRegistry& registry);         // LinearClassifier, LinearRegressor
void register_svm(KernelRegistry& registry);            // SVMClassifier, SVMRegressor
void register_preprocess(
    KernelRegistry& registry);  // Normalizer, Scaler, Binarizer, Imputer, ArrayFeatureExtractor, FeatureVectorizer
void register_encoders(KernelRegistry& registry);  // OneHotEncoder, LabelEncoder, CategoryMapper, DictVectorizer, CastMap

}  // namespace onnxkit::runtime::ml
