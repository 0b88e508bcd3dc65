// TreeEnsembleClassifier and TreeEnsembleRegressor (ai.onnx.ml 1 and 3),
// and TreeEnsemble (ai.onnx.ml 5).
//
// The attributes describe the nodes of all trees as parallel arrays, keyed
// by (tree id, node id) up to opset 3 and by position in opset 5. At build
// they are flattened once into one array of 24-byte nodes, each tree laid out depth first (a node's true child
// right after it) with children as array indices, so evaluation is a tight
// loop of loads and compares. Building also checks what evaluation relies
// on: every child exists in its tree and every node is reached once (no
// cycles), so a hostile model cannot loop forever or read out of bounds.
//
// Rows are evaluated in blocks: each block walks every tree for all of its
// rows before moving to the next tree, so a tree stays in cache while it
// is used; blocks run in parallel. Forests of one comparison mode and float
// thresholds (nearly all) get a second, compact layout that rows walk
// without branches (make_compact); the plain walk is its oracle.

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <unordered_map>

#include "runtime/kernels/ml/ml.h"
#include "runtime/parallel.h"
#include "runtime/session.h"

namespace onnxkit::runtime::ml {
namespace {

enum class Mode : uint8_t { leq, lt, gte, gt, eq, neq, member, leaf };

Result<Mode> parse_mode(const std::string& s) {
  static const std::pair<const char*, Mode> kModes[] = {
      {"BRANCH_LEQ", Mode::leq}, {"BRANCH_LT", Mode::lt},   {"BRANCH_GTE", Mode::gte}, {"BRANCH_GT", Mode::gt},
      {"BRANCH_EQ", Mode::eq},   {"BRANCH_NEQ", Mode::neq}, {"LEAF", Mode::leaf}};
  for (const auto& [name, mode] : kModes)
    if (s == name) return mode;
  return make_error("node mode '{}' is not one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF", s);
}

// A node of the flattened forest. A leaf (feature < 0) keeps the range
// [yes, no) of its weights in the forest's weight arrays instead of children.
struct FlatNode {
  double threshold;  // for Mode::member, the index of its set in Forest::sets
  int32_t feature;
  uint32_t yes;  // the child taken when the comparison holds
  uint32_t no;
  Mode mode;
  bool missing_true;  // a NaN feature goes to `yes`
};

struct Forest {
  std::vector<FlatNode> nodes;
  std::vector<uint32_t> roots;         // one per tree
  std::vector<int32_t> weight_target;  // the class or target each leaf weight adds to
  std::vector<double> weight_value;
  int64_t targets = 0;   // classes or regression targets
  int32_t features = 0;  // 1 + the largest feature index a branch reads
  // The mode all branches share (most converters use one), or leaf when
  // they differ.
  Mode common_mode = Mode::leaf;
  // The sets of the SET_MEMBER nodes (opset 5), each sorted.
  std::vector<std::vector<double>> sets;
  // Some node sends NaN to its true child: evaluation tests for NaN only then.
  bool tracks_missing = false;

  // The compact layout the fast evaluation walks, when the forest has one
  // (see make_compact); empty otherwise, and the plain walk above runs.
  struct CompactNode {
    float threshold;  // a leaf: NaN, so no comparison holds
    int32_t feature;  // a leaf: 0 (any feature a row has); see widen_rows when tracks_missing
    uint32_t no;      // the false child (the true one is the next node); a leaf: itself
    uint32_t aux;     // a leaf: its first weight; a branch: 0
  };
  std::vector<CompactNode> compact;
  std::vector<uint8_t> depths;    // per tree, the edges from its root to its deepest leaf
  uint32_t weights_per_leaf = 0;  // when every leaf has that many weights; 0: read nodes[leaf].no
};

// The node attributes of the opset 1-3 ops, and the leaf weights
// (prefix "class_" or "target_"). The integer lists are views of the
// node's attributes: a forest of millions of nodes is read without copies.
struct TreeAttrs {
  size_t values_size() const { return float_values.empty() ? double_values.size() : float_values.size(); }
  double value(size_t i) const { return float_values.empty() ? double_values[i] : float_values[i]; }
  size_t weights_size() const { return float_weights.empty() ? double_weights.size() : float_weights.size(); }
  double weight(size_t i) const { return float_weights.empty() ? double_weights[i] : float_weights[i]; }

  std::span<const int64_t> tree_ids, node_ids, features, true_ids, false_ids, missing_true;
  std::vector<Mode> modes;
  // nodes_values: a view of the float list, or nodes_values_as_tensor read as doubles.
  std::span<const float> float_values;
  std::vector<double> double_values;
  std::span<const int64_t> leaf_tree_ids, leaf_node_ids, leaf_targets;
  // The leaf weights, likewise.
  std::span<const float> float_weights;
  std::vector<double> double_weights;
};

// A float-list attribute as a view of the list, or, when it comes as
// `<name>_as_tensor`, as doubles.
Status read_floats(const KernelInfo& info, const std::string& name, std::span<const float>& floats,
                   std::vector<double>& doubles) {
  if (info.has_attr(name + "_as_tensor")) {
    ONNXKIT_ASSIGN(doubles, attr_doubles(info, name));
  } else if (const ir::Attribute* v = info.node().attribute(name)) {
    floats = {v->proto.floats().data(), static_cast<size_t>(v->proto.floats_size())};
  }
  return {};
}

std::span<const int64_t> ints_view(const KernelInfo& info, const std::string& name) {
  const ir::Attribute* a = info.node().attribute(name);
  if (a == nullptr) return {};
  return {a->proto.ints().data(), static_cast<size_t>(a->proto.ints_size())};
}

Result<TreeAttrs> read_tree_attrs(const KernelInfo& info, const std::string& leaf_prefix) {
  TreeAttrs a;
  a.tree_ids = ints_view(info, "nodes_treeids");
  a.node_ids = ints_view(info, "nodes_nodeids");
  a.features = ints_view(info, "nodes_featureids");
  a.true_ids = ints_view(info, "nodes_truenodeids");
  a.false_ids = ints_view(info, "nodes_falsenodeids");
  a.missing_true = ints_view(info, "nodes_missing_value_tracks_true");
  if (const ir::Attribute* modes = info.node().attribute("nodes_modes")) {
    a.modes.reserve(static_cast<size_t>(modes->proto.strings_size()));
    // Parsed once per run of equal strings: a forest has millions and two kinds.
    const std::string* last = nullptr;
    Mode last_mode = Mode::leaf;
    for (const std::string& m : modes->proto.strings()) {
      if (last == nullptr || m != *last) {
        ONNXKIT_ASSIGN(last_mode, parse_mode(m));
        last = &m;
      }
      a.modes.push_back(last_mode);
    }
  }
  ONNXKIT_TRY(read_floats(info, "nodes_values", a.float_values, a.double_values));
  a.leaf_tree_ids = ints_view(info, leaf_prefix + "treeids");
  a.leaf_node_ids = ints_view(info, leaf_prefix + "nodeids");
  a.leaf_targets = ints_view(info, leaf_prefix + "ids");
  ONNXKIT_TRY(read_floats(info, leaf_prefix + "weights", a.float_weights, a.double_weights));
  const size_t n = a.node_ids.size();
  if (n == 0) return make_error("attribute nodes_nodeids is empty: the ensemble has no nodes");
  auto check = [&](size_t size, const char* name, bool optional) -> Status {
    if (size == n || (optional && size == 0)) return {};
    return make_error("attribute {} has {} entries, nodes_nodeids has {}", name, size, n);
  };
  ONNXKIT_TRY(check(a.tree_ids.size(), "nodes_treeids", false));
  ONNXKIT_TRY(check(a.features.size(), "nodes_featureids", false));
  ONNXKIT_TRY(check(a.true_ids.size(), "nodes_truenodeids", false));
  ONNXKIT_TRY(check(a.false_ids.size(), "nodes_falsenodeids", false));
  ONNXKIT_TRY(check(a.modes.size(), "nodes_modes", false));
  ONNXKIT_TRY(check(a.values_size(), "nodes_values", true));
  ONNXKIT_TRY(check(a.missing_true.size(), "nodes_missing_value_tracks_true", true));
  const size_t w = a.weights_size();
  if (a.leaf_tree_ids.size() != w || a.leaf_node_ids.size() != w || a.leaf_targets.size() != w)
    return make_error("attributes {0}treeids, {0}nodeids, {0}ids and {0}weights differ in length ({1}, {2}, {3}, {4})",
                      leaf_prefix, a.leaf_tree_ids.size(), a.leaf_node_ids.size(), a.leaf_targets.size(), w);
  return a;
}

// Finds nodes by (tree id, node id). Converters write each tree's nodes
// together with ids 0..k-1 in order: such a tree is a range of positions
// and a lookup is an addition. Other trees keep their (node id, position)
// pairs sorted.
class NodeIndex {
 public:
  explicit NodeIndex(const TreeAttrs& a) {
    const size_t n = a.node_ids.size();
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && a.tree_ids[j] == a.tree_ids[i]) ++j;
      auto [it, fresh] = tree_slot_.try_emplace(a.tree_ids[i], trees_.size());
      if (fresh) {
        Tree t{a.tree_ids[i], static_cast<uint32_t>(i), static_cast<uint32_t>(j - i), true, {}};
        for (size_t k = i; k < j && t.dense; ++k) t.dense = a.node_ids[k] == static_cast<int64_t>(k - i);
        if (!t.dense) t.add(a, i, j);
        trees_.push_back(std::move(t));
      } else {
        // The tree's nodes come in more than one run.
        Tree& t = trees_[it->second];
        if (t.dense) t.add(a, t.first, size_t{t.first} + t.count);
        t.dense = false;
        t.add(a, i, j);
      }
      i = j;
    }
    for (Tree& t : trees_)
      if (!t.dense && !std::is_sorted(t.nodes.begin(), t.nodes.end())) std::sort(t.nodes.begin(), t.nodes.end());
  }
  size_t tree_count() const { return trees_.size(); }
  int64_t tree_id(size_t t) const { return trees_[t].id; }
  // The slot of a tree id, or -1.
  int64_t slot(int64_t tree) const {
    auto it = tree_slot_.find(tree);
    return it == tree_slot_.end() ? -1 : static_cast<int64_t>(it->second);
  }
  // Calls f(node id, position) for each node of tree slot t.
  template <class F> void for_each_node(size_t t, F&& f) const {
    const Tree& tree = trees_[t];
    if (tree.dense)
      for (uint32_t k = 0; k < tree.count; ++k) f(int64_t{k}, tree.first + k);
    else
      for (const auto& [id, pos] : tree.nodes) f(id, pos);
  }
  // The position of node `node` of tree slot t, or -1.
  int64_t find_in(size_t t, int64_t node) const {
    const Tree& tree = trees_[t];
    if (tree.dense) return node >= 0 && node < static_cast<int64_t>(tree.count) ? int64_t{tree.first} + node : -1;
    auto pos = std::lower_bound(tree.nodes.begin(), tree.nodes.end(), std::pair<int64_t, uint32_t>(node, 0));
    return pos != tree.nodes.end() && pos->first == node ? pos->second : -1;
  }
  // The duplicate node id of a tree, if any.
  std::optional<std::pair<int64_t, int64_t>> duplicate() const {
    for (const Tree& t : trees_)
      for (size_t j = 1; j < t.nodes.size(); ++j)
        if (t.nodes[j].first == t.nodes[j - 1].first) return std::pair(t.id, t.nodes[j].first);
    return std::nullopt;
  }

 private:
  struct Tree {
    int64_t id;
    uint32_t first, count;  // dense: the positions [first, first + count), node ids 0..count-1
    bool dense;
    std::vector<std::pair<int64_t, uint32_t>> nodes;  // not dense: (node id, position), sorted
    void add(const TreeAttrs& a, size_t from, size_t to) {
      for (size_t k = from; k < to; ++k) nodes.emplace_back(a.node_ids[k], static_cast<uint32_t>(k));
    }
  };
  std::unordered_map<int64_t, size_t> tree_slot_;
  std::vector<Tree> trees_;
};

Result<Forest> build_forest(const TreeAttrs& a, int64_t targets, const std::string& leaf_prefix) {
  const size_t n = a.node_ids.size();
  if (n >= (size_t{1} << 31)) return make_error("the ensemble has {} nodes, more than 2^31", n);
  Forest f;
  f.targets = targets;
  const std::vector<Mode>& modes = a.modes;
  bool first_branch = true;
  for (size_t i = 0; i < n; ++i) {
    if (modes[i] == Mode::leaf) continue;
    if (first_branch) f.common_mode = modes[i];
    else if (f.common_mode != modes[i]) f.common_mode = Mode::leaf;
    first_branch = false;
  }
  NodeIndex index(a);
  if (auto dup = index.duplicate()) return make_error("tree {} has node id {} twice", dup->first, dup->second);

  // Leaf weights grouped by node position (a counting sort): node i's are
  // [weight_end[i - 1], weight_end[i]) (from 0 for node 0).
  std::vector<uint32_t> weight_end(n + 1, 0);
  const size_t weights = a.weights_size();
  std::vector<uint32_t> weight_node(weights);
  int64_t slot = -1;
  for (size_t w = 0; w < weights; ++w) {
    if (w == 0 || a.leaf_tree_ids[w] != a.leaf_tree_ids[w - 1]) slot = index.slot(a.leaf_tree_ids[w]);
    const int64_t pos = slot < 0 ? -1 : index.find_in(static_cast<size_t>(slot), a.leaf_node_ids[w]);
    if (pos < 0)
      return make_error("{}weights[{}] names node {} of tree {}, which does not exist", leaf_prefix, w, a.leaf_node_ids[w],
                        a.leaf_tree_ids[w]);
    if (a.leaf_targets[w] < 0 || a.leaf_targets[w] >= targets)
      return make_error("{}ids[{}] is {}, outside [0, {})", leaf_prefix, w, a.leaf_targets[w], targets);
    weight_node[w] = static_cast<uint32_t>(pos);
    ++weight_end[pos + 1];
  }
  for (size_t i = 0; i < n; ++i) weight_end[i + 1] += weight_end[i];
  f.weight_target.resize(weights);
  f.weight_value.resize(weights);
  for (size_t w = 0; w < weights; ++w) {
    // Node i's next place, from its first: once all are placed, its end.
    const uint32_t place = weight_end[weight_node[w]]++;
    f.weight_target[place] = static_cast<int32_t>(a.leaf_targets[w]);
    f.weight_value[place] = a.weight(w);
  }

  // The root of a tree is its one node no other names. Children are checked
  // here and looked up again where the nodes are laid out (an addition in
  // the trees converters write): arrays of them would be two more the size
  // of the forest to fill, which costs more than the lookups.
  std::vector<uint8_t> named(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || a.tree_ids[i] != a.tree_ids[i - 1]) slot = index.slot(a.tree_ids[i]);
    if (modes[i] == Mode::leaf) continue;
    const int64_t y = index.find_in(static_cast<size_t>(slot), a.true_ids[i]);
    const int64_t m = index.find_in(static_cast<size_t>(slot), a.false_ids[i]);
    if (y < 0 || m < 0)
      return make_error("node {} of tree {} has child {}, which the tree does not have", a.node_ids[i], a.tree_ids[i],
                        y < 0 ? a.true_ids[i] : a.false_ids[i]);
    if (a.features[i] < 0 || a.features[i] > INT32_MAX - 1)
      return make_error("node {} of tree {} reads feature {}", a.node_ids[i], a.tree_ids[i], a.features[i]);
    f.features = std::max(f.features, static_cast<int32_t>(a.features[i] + 1));
    named[y] = 1;
    named[m] = 1;
  }

  f.nodes.reserve(n);
  std::vector<uint8_t> placed(n, 0);
  struct Pending {
    uint32_t pos;
    int64_t parent;  // new index of the parent, -1 for a root
    bool is_yes;
  };
  std::vector<Pending> stack;
  for (size_t t = 0; t < index.tree_count(); ++t) {
    int64_t root = -1;
    index.for_each_node(t, [&](int64_t, uint32_t pos) {
      if (root < 0 && !named[pos]) root = pos;
    });
    if (root < 0) return make_error("tree {} has no root: every node is some node's child", index.tree_id(t));
    f.roots.push_back(static_cast<uint32_t>(f.nodes.size()));
    stack.push_back({static_cast<uint32_t>(root), -1, true});
    while (!stack.empty()) {
      Pending p = stack.back();
      stack.pop_back();
      if (placed[p.pos])
        return make_error("tree {} reaches node {} twice: it is not a tree", index.tree_id(t), a.node_ids[p.pos]);
      placed[p.pos] = 1;
      const uint32_t at = static_cast<uint32_t>(f.nodes.size());
      if (p.parent >= 0) (p.is_yes ? f.nodes[p.parent].yes : f.nodes[p.parent].no) = at;
      FlatNode node{};
      node.mode = modes[p.pos];
      if (node.mode == Mode::leaf) {
        node.feature = -1;
        node.yes = p.pos == 0 ? 0 : weight_end[p.pos - 1];
        node.no = weight_end[p.pos];
      } else {
        node.feature = static_cast<int32_t>(a.features[p.pos]);
        node.threshold = a.values_size() == 0 ? 0.0 : static_cast<double>(static_cast<float>(a.value(p.pos)));
        node.missing_true = !a.missing_true.empty() && a.missing_true[p.pos] != 0;
        f.tracks_missing = f.tracks_missing || node.missing_true;
        stack.push_back({static_cast<uint32_t>(index.find_in(t, a.false_ids[p.pos])), at, false});
        stack.push_back({static_cast<uint32_t>(index.find_in(t, a.true_ids[p.pos])), at, true});
      }
      f.nodes.push_back(node);
    }
  }
  return f;
}

// Lays the forest out for the fast walk, when every branch is BRANCH_LEQ
// or every branch is BRANCH_LT (what converters write) and no threshold
// needs more than a float: 16-byte nodes, four to a cache line, and leaves
// that loop to themselves, so rows walk a tree side by side with no branch
// to mispredict, a row that reached its leaf waiting there for the others.
// Sessions with SessionOptions::blocked_layout false skip it and walk the
// plain layout: the oracle the tests compare the fast walk against.
//
// NaN costs the walk nothing: where some node sends it to its true child,
// the rows are first widened (widen_rows) to 2 x features values, NaN read
// as +inf by the nodes that send it to their false child and as -inf from
// the second half by those that send it to the true one, so one comparison
// routes every value. That holds for every threshold but three, which
// leave the forest on the plain walk: +inf (LEQ, NaN to false), -inf (LT,
// NaN to true) and NaN.
void make_compact(Forest& f) {
  if (f.common_mode != Mode::leq && f.common_mode != Mode::lt) return;
  const bool lt = f.common_mode == Mode::lt;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // features >= 1: a leaf reads feature 0 of the row.
  if (!f.sets.empty() || f.nodes.size() >= (size_t{1} << 31) || f.features < 1) return;
  if (f.tracks_missing && f.features > INT32_MAX / 2) return;
  std::vector<Forest::CompactNode> compact(f.nodes.size());
  std::vector<uint8_t> depth(f.nodes.size(), 0);
  std::vector<uint8_t> depths(f.roots.size(), 0);
  uint32_t per_leaf = 0;
  bool uniform = true, first_leaf = true;
  for (size_t t = 0; t < f.roots.size(); ++t) {
    const size_t end = t + 1 < f.roots.size() ? f.roots[t + 1] : f.nodes.size();
    for (size_t i = f.roots[t]; i < end; ++i) {
      const FlatNode& n = f.nodes[i];
      Forest::CompactNode& c = compact[i];
      if (n.feature < 0) {
        c = {std::numeric_limits<float>::quiet_NaN(), 0, static_cast<uint32_t>(i), n.yes};
        if (first_leaf) per_leaf = n.no - n.yes;
        first_leaf = false;
        uniform = uniform && n.no - n.yes == per_leaf;
        depths[t] = std::max(depths[t], depth[i]);
        continue;
      }
      const float threshold = static_cast<float>(n.threshold);
      if (static_cast<double>(threshold) != n.threshold || depth[i] == UINT8_MAX) return;
      if (f.tracks_missing && (std::isnan(threshold) || (!lt && !n.missing_true && threshold == kInf) ||
                               (lt && n.missing_true && threshold == -kInf)))
        return;
      const int32_t feature = f.tracks_missing && n.missing_true ? n.feature + f.features : n.feature;
      c = {threshold, feature, n.no, 0};
      // Depth first: the parent comes before its children.
      depth[n.yes] = depth[n.no] = static_cast<uint8_t>(depth[i] + 1);
    }
  }
  f.compact = std::move(compact);
  f.depths = std::move(depths);
  f.weights_per_leaf = uniform ? per_leaf : 0;
}

enum class Aggregate { sum, average, min, max };

// Rows of a block of the compact walk: every tree is walked for them
// before the next block, their features staying in L1 meanwhile.
inline constexpr int64_t kCompactBlock = 128;

// Compares in double: a float feature and a float threshold compare the
// same in either type, and opset 5's thresholds may be doubles.
template <Mode M> inline bool goes_yes(const Forest& f, const FlatNode& n, double v) {
  const Mode use = M == Mode::leaf ? n.mode : M;
  switch (use) {
    case Mode::leq: return v <= n.threshold;
    case Mode::lt: return v < n.threshold;
    case Mode::gte: return v >= n.threshold;
    case Mode::gt: return v > n.threshold;
    case Mode::eq: return v == n.threshold;
    case Mode::neq: return v != n.threshold;
    case Mode::member: {
      const auto& set = f.sets[static_cast<size_t>(n.threshold)];
      return std::binary_search(set.begin(), set.end(), v);
    }
    case Mode::leaf: return false;
  }
  return false;
}

// M is the mode every branch has, or leaf to read each node's own.
template <Mode M, bool Missing, class T> inline uint32_t find_leaf(const Forest& f, uint32_t i, const T* x) {
  const FlatNode* nodes = f.nodes.data();
  while (nodes[i].feature >= 0) {
    const FlatNode& n = nodes[i];
    const double v = static_cast<double>(x[n.feature]);
    bool yes = goes_yes<M>(f, n, v);
    if constexpr (Missing && std::is_floating_point_v<T>) yes = yes || (n.missing_true && std::isnan(v));
    i = yes ? n.yes : n.no;
  }
  return i;
}

// Adds leaf weights [begin, end) to row r's scores as `agg` combines them.
inline void add_leaf_weights(const Forest& f, uint32_t begin, uint32_t end, int64_t r, Aggregate agg, double* scores,
                             uint8_t* has) {
  const int64_t k = f.targets;
  for (uint32_t w = begin; w < end; ++w) {
    const int64_t slot = r * k + f.weight_target[w];
    const double v = f.weight_value[w];
    double& s = scores[slot];
    switch (agg) {
      case Aggregate::sum:
      case Aggregate::average: s += v; break;
      case Aggregate::min: s = has[slot] && s <= v ? s : v; break;
      case Aggregate::max: s = has[slot] && s >= v ? s : v; break;
    }
    has[slot] = 1;
  }
}

// Adds every tree's leaf weights for rows [r0, r1) into scores [N, targets]
// (has: whether a weight reached the slot).
template <Mode M, bool Missing, class T>
void accumulate_rows(const Forest& f, const T* x, int64_t c, int64_t r0, int64_t r1, Aggregate agg, double* scores,
                     uint8_t* has) {
  const FlatNode* nodes = f.nodes.data();
  for (uint32_t root : f.roots) {
    for (int64_t r = r0; r < r1; ++r) {
      const FlatNode& leaf = nodes[find_leaf<M, Missing>(f, root, x + r * c)];
      add_leaf_weights(f, leaf.yes, leaf.no, r, agg, scores, has);
    }
  }
}

// The rows [r0, r1) of x as the compact nodes of a forest that tracks
// missing values read them (make_compact): 2 x features values a row, NaN
// becoming +inf in the first half and -inf in the second.
template <class T> void widen_rows(const Forest& f, const T* x, int64_t c, int64_t r0, int64_t r1, std::vector<T>& out) {
  const int64_t width = f.features;
  out.resize(static_cast<size_t>((r1 - r0) * 2 * width));
  T* o = out.data();
  for (int64_t r = r0; r < r1; ++r, o += 2 * width) {
    const T* row = x + r * c;
    for (int64_t k = 0; k < width; ++k) {
      const bool nan = std::isnan(row[k]);
      o[k] = nan ? std::numeric_limits<T>::infinity() : row[k];
      o[width + k] = nan ? -std::numeric_limits<T>::infinity() : row[k];
    }
  }
}

// accumulate_rows on the compact layout. Each tree takes the block's rows
// kWalkGroup at a time, one level down per step: the rows of a group are
// independent, so their loads overlap instead of waiting on each other. A
// group stops as soon as none of its rows moved (all sit on leaves), and
// after the tree's depth at the latest: converters' trees are often far
// from balanced (LightGBM grows leaf by leaf; its trees of 31 leaves reach
// depth 10 where most rows stop by 7), so walking every row to the deepest
// leaf wastes a third of the steps, while for balanced trees the bound ends
// the walk without the step that would find nothing moved.
inline constexpr int kWalkGroup = 8;
inline constexpr int64_t kWidenedBlockBytes = 24 * 1024;

template <bool Lt, class T> inline uint32_t compact_step(const Forest::CompactNode& n, T v, uint32_t at) {
  // A mask, not a branch: compilers turn `?:` here into jumps.
  const uint32_t mask = 0u - static_cast<uint32_t>(Lt ? v < n.threshold : v <= n.threshold);
  return ((at + 1) & mask) | (n.no & ~mask);
}

template <bool Lt, class T>
void accumulate_rows_compact(const Forest& f, const T* x, int64_t c, int64_t r0, int64_t r1, Aggregate agg, double* scores,
                             uint8_t* has) {
  const Forest::CompactNode* nodes = f.compact.data();
  std::vector<T> widened;
  const T* block = x + r0 * c;
  int64_t stride = c;
  if (f.tracks_missing) {
    widen_rows(f, x, c, r0, r1, widened);
    block = widened.data();
    stride = 2 * int64_t{f.features};
  }
  for (size_t t = 0; t < f.roots.size(); ++t) {
    const uint32_t root = f.roots[t];
    const int depth = f.depths[t];
    for (int64_t r = r0; r < r1; r += kWalkGroup) {
      // A short last group walks its last row again in the spare places.
      const int64_t rows = std::min<int64_t>(kWalkGroup, r1 - r);
      uint32_t at[kWalkGroup];
      const T* row[kWalkGroup];
      for (int g = 0; g < kWalkGroup; ++g) {
        at[g] = root;
        row[g] = block + (r - r0 + std::min<int64_t>(g, rows - 1)) * stride;
      }
      for (int d = 0; d < depth; ++d) {
        uint32_t moved = 0;
        for (int g = 0; g < kWalkGroup; ++g) {
          const Forest::CompactNode& n = nodes[at[g]];
          const uint32_t next = compact_step<Lt>(n, row[g][n.feature], at[g]);
          moved |= next ^ at[g];
          at[g] = next;
        }
        if (moved == 0) break;
      }
      for (int64_t g = 0; g < rows; ++g) {
        const uint32_t begin = nodes[at[g]].aux;
        const uint32_t end = f.weights_per_leaf != 0 ? begin + f.weights_per_leaf : f.nodes[at[g]].no;
        add_leaf_weights(f, begin, end, r + g, agg, scores, has);
      }
    }
  }
}

template <class T>
void accumulate(const Forest& f, const T* x, int64_t n, int64_t c, Aggregate agg, double* scores, uint8_t* has) {
  constexpr bool kFloating = std::is_floating_point_v<T>;
  const bool compact = kFloating && !f.compact.empty();
  // Rows walked through one tree before the next; widened rows (with
  // missing values) fewer when they are long, so that they stay in L1.
  int64_t block = compact ? kCompactBlock : 64;
  if (compact && f.tracks_missing)
    block = std::clamp<int64_t>(kWidenedBlockBytes / (2 * int64_t{f.features} * int64_t{sizeof(T)}), kWalkGroup, kCompactBlock);
  const int64_t blocks = (n + block - 1) / block;
  const bool worth = n * static_cast<int64_t>(f.nodes.size()) >= (1 << 16) && blocks > 1;
  parallel_for(blocks, worth, [&](int64_t b) {
    const int64_t r0 = b * block, r1 = std::min(n, r0 + block);
    if constexpr (kFloating) {
      if (compact) {
        if (f.common_mode == Mode::lt) accumulate_rows_compact<true>(f, x, c, r0, r1, agg, scores, has);
        else accumulate_rows_compact<false>(f, x, c, r0, r1, agg, scores, has);
        return;
      }
    }
    auto run = [&]<bool Missing>() {
      switch (f.common_mode) {
        case Mode::leq: accumulate_rows<Mode::leq, Missing>(f, x, c, r0, r1, agg, scores, has); break;
        case Mode::lt: accumulate_rows<Mode::lt, Missing>(f, x, c, r0, r1, agg, scores, has); break;
        default: accumulate_rows<Mode::leaf, Missing>(f, x, c, r0, r1, agg, scores, has); break;
      }
    };
    if (f.tracks_missing) run.template operator()<true>();
    else run.template operator()<false>();
  });
}

// Scores [N, targets] of the rows of X, with has-flags.
Status score_rows(const Forest& f, const Tensor& x, Aggregate agg, std::vector<double>& scores, std::vector<uint8_t>& has,
                  Rows& rows) {
  ONNXKIT_ASSIGN(rows, rows_of(x));
  if (rows.c < f.features)
    return make_error("input X has {} features per row, the trees read feature {}", rows.c, f.features - 1);
  scores.assign(static_cast<size_t>(rows.n * f.targets), 0.0);
  has.assign(scores.size(), 0);
  switch (x.dtype()) {
    case DataType::float32: accumulate(f, x.data<float>(), rows.n, rows.c, agg, scores.data(), has.data()); break;
    case DataType::float64: accumulate(f, x.data<double>(), rows.n, rows.c, agg, scores.data(), has.data()); break;
    case DataType::int64: accumulate(f, x.data<int64_t>(), rows.n, rows.c, agg, scores.data(), has.data()); break;
    case DataType::int32: accumulate(f, x.data<int32_t>(), rows.n, rows.c, agg, scores.data(), has.data()); break;
    default: return make_error("input X is {}; float, double, int64 or int32 expected", to_string(x.dtype()));
  }
  return {};
}

// --- TreeEnsemble (opset 5) -------------------------------------------------------

Result<std::vector<double>> tensor_doubles(const KernelInfo& info, const char* name, bool required) {
  ONNXKIT_ASSIGN(std::optional<Tensor> t, info.attr_tensor(name));
  if (!t) {
    if (required) return make_error("attribute {} is missing", name);
    return std::vector<double>();
  }
  return read_doubles(*t, std::string("attribute ") + name);
}

// Opset 5 names nodes and leaves by position: children are node or leaf
// indices (nodes_trueleafs says which), each tree starts at tree_roots[t],
// and a SET_MEMBER node (mode 6) takes the next NaN-terminated run of
// membership_values as its set.
Result<Forest> build_forest_v5(const KernelInfo& info, int64_t targets) {
  auto features = ints_view(info, "nodes_featureids");
  auto true_ids = ints_view(info, "nodes_truenodeids"), false_ids = ints_view(info, "nodes_falsenodeids");
  auto true_leafs = ints_view(info, "nodes_trueleafs"), false_leafs = ints_view(info, "nodes_falseleafs");
  auto missing = ints_view(info, "nodes_missing_value_tracks_true");
  auto roots = ints_view(info, "tree_roots"), leaf_targets = ints_view(info, "leaf_targetids");
  ONNXKIT_ASSIGN(std::vector<double> splits, tensor_doubles(info, "nodes_splits", true));
  ONNXKIT_ASSIGN(std::vector<double> leaf_weights, tensor_doubles(info, "leaf_weights", true));
  ONNXKIT_ASSIGN(std::vector<double> members, tensor_doubles(info, "membership_values", false));
  ONNXKIT_ASSIGN(std::optional<Tensor> modes_tensor, info.attr_tensor("nodes_modes"));
  if (!modes_tensor || modes_tensor->dtype() != DataType::uint8)
    return make_error("attribute nodes_modes must be a uint8 tensor");
  const size_t n = features.size(), leaves = leaf_targets.size();
  if (true_ids.size() != n || false_ids.size() != n || splits.size() != n || static_cast<size_t>(modes_tensor->numel()) != n ||
      (!true_leafs.empty() && true_leafs.size() != n) || (!false_leafs.empty() && false_leafs.size() != n) ||
      (!missing.empty() && missing.size() != n))
    return make_error("the nodes_* attributes differ in length (nodes_featureids has {})", n);
  if (leaf_weights.size() != leaves) return make_error("{} leaf_weights for {} leaf_targetids", leaf_weights.size(), leaves);
  if (n >= (size_t{1} << 31) || leaves >= (size_t{1} << 31)) return make_error("the ensemble is too large");
  Forest f;
  f.targets = targets;
  f.weight_target.resize(leaves);
  f.weight_value = leaf_weights;
  for (size_t l = 0; l < leaves; ++l) {
    if (leaf_targets[l] < 0 || leaf_targets[l] >= targets)
      return make_error("leaf_targetids[{}] is {}, outside [0, {})", l, leaf_targets[l], targets);
    f.weight_target[l] = static_cast<int32_t>(leaf_targets[l]);
  }
  // Modes, and the set of each SET_MEMBER node.
  std::vector<Mode> modes(n);
  std::vector<int64_t> set_of(n, -1);
  size_t at = 0;
  bool first_branch = true;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t m = modes_tensor->data<uint8_t>()[i];
    if (m > 6) return make_error("nodes_modes[{}] is {}, not a mode (0-6)", i, m);
    modes[i] = static_cast<Mode>(m);
    if (modes[i] == Mode::member) {
      std::vector<double> set;
      while (at < members.size() && !std::isnan(members[at])) set.push_back(members[at++]);
      if (at >= members.size()) return make_error("membership_values ends before the set of node {}", i);
      ++at;  // the NaN closing the set
      std::sort(set.begin(), set.end());
      set_of[i] = static_cast<int64_t>(f.sets.size());
      f.sets.push_back(std::move(set));
    }
    if (first_branch) f.common_mode = modes[i];
    else if (f.common_mode != modes[i]) f.common_mode = Mode::leaf;
    first_branch = false;
    if (features[i] < 0 || features[i] > INT32_MAX - 1) return make_error("node {} reads feature {}", i, features[i]);
    f.features = std::max(f.features, static_cast<int32_t>(features[i] + 1));
  }
  struct Pending {
    int64_t index;  // a node, or a leaf when is_leaf
    bool is_leaf;
    int64_t parent;
    bool is_yes;
  };
  std::vector<uint8_t> placed(n, 0);
  std::vector<Pending> stack;
  f.nodes.reserve(n + leaves);
  for (int64_t root : roots) {
    if (root < 0 || static_cast<size_t>(root) >= n) return make_error("tree_roots names node {}, of {}", root, n);
    f.roots.push_back(static_cast<uint32_t>(f.nodes.size()));
    stack.push_back({root, false, -1, true});
    while (!stack.empty()) {
      Pending p = stack.back();
      stack.pop_back();
      const uint32_t here = static_cast<uint32_t>(f.nodes.size());
      if (p.parent >= 0) (p.is_yes ? f.nodes[p.parent].yes : f.nodes[p.parent].no) = here;
      FlatNode node{};
      if (p.is_leaf) {
        if (p.index < 0 || static_cast<size_t>(p.index) >= leaves)
          return make_error("a node names leaf {}, of {}", p.index, leaves);
        node.feature = -1;
        node.mode = Mode::leaf;
        node.yes = static_cast<uint32_t>(p.index);
        node.no = static_cast<uint32_t>(p.index + 1);
        f.nodes.push_back(node);
        continue;
      }
      const size_t i = static_cast<size_t>(p.index);
      if (p.index < 0 || i >= n) return make_error("a node names node {}, of {}", p.index, n);
      if (placed[i]) return make_error("node {} is reached twice: the trees are not trees", i);
      placed[i] = 1;
      node.feature = static_cast<int32_t>(features[i]);
      node.mode = modes[i];
      node.threshold = modes[i] == Mode::member ? static_cast<double>(set_of[i]) : splits[i];
      node.missing_true = !missing.empty() && missing[i] != 0;
      f.tracks_missing = f.tracks_missing || node.missing_true;
      f.nodes.push_back(node);
      stack.push_back({false_ids[i], !false_leafs.empty() && false_leafs[i] != 0, here, false});
      stack.push_back({true_ids[i], !true_leafs.empty() && true_leafs[i] != 0, here, true});
    }
  }
  return f;
}

struct Ensemble {
  Forest forest;
  Aggregate aggregate;
  PostTransform post;
};

Result<ComputeFn> build_tree_ensemble(const KernelInfo& info) {
  auto e = std::make_shared<Ensemble>();
  const int64_t targets = info.attr_int("n_targets", 1);
  if (targets < 1 || targets > kMaxAttributeValue) return make_error("n_targets is {}", targets);
  const int64_t agg = info.attr_int("aggregate_function", 1);
  static const Aggregate kAggregates[] = {Aggregate::average, Aggregate::sum, Aggregate::min, Aggregate::max};
  if (agg < 0 || agg > 3) return make_error("aggregate_function is {}, not 0-3 (AVERAGE, SUM, MIN, MAX)", agg);
  e->aggregate = kAggregates[agg];
  const int64_t post = info.attr_int("post_transform", 0);
  static const PostTransform kPosts[] = {PostTransform::none, PostTransform::softmax, PostTransform::logistic,
                                         PostTransform::softmax_zero, PostTransform::probit};
  if (post < 0 || post > 4) return make_error("post_transform is {}, not 0-4", post);
  e->post = kPosts[post];
  ONNXKIT_ASSIGN(e->forest, build_forest_v5(info, targets));
  if (info.options().blocked_layout) make_compact(e->forest);
  return ComputeFn([e](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->dtype() != DataType::float32 && x->dtype() != DataType::float64)
      return make_error("input X is {}; float or double expected", to_string(x->dtype()));
    std::vector<double> scores;
    std::vector<uint8_t> has;
    Rows rows;
    ONNXKIT_TRY(score_rows(e->forest, *x, e->aggregate, scores, has, rows));
    const int64_t k = e->forest.targets;
    Tensor& y = ctx.output(0, x->dtype(), {rows.n, k});
    const double trees = static_cast<double>(e->forest.roots.size());
    for (int64_t i = 0; i < rows.n; ++i) {
      double* s = scores.data() + i * k;
      if (e->aggregate == Aggregate::average)
        for (int64_t t = 0; t < k; ++t) s[t] /= trees;
      apply_post_transform(e->post, s, k);
      for (int64_t t = 0; t < k; ++t) {
        if (x->dtype() == DataType::float32) y.mutable_data<float>()[i * k + t] = static_cast<float>(s[t]);
        else y.mutable_data<double>()[i * k + t] = s[t];
      }
    }
    return {};
  });
}

// --- TreeEnsembleRegressor ------------------------------------------------------

struct Regressor {
  Forest forest;
  Aggregate aggregate;
  PostTransform post;
  std::vector<double> base_values;
};

Result<ComputeFn> build_regressor(const KernelInfo& info) {
  auto r = std::make_shared<Regressor>();
  const int64_t targets = info.attr_int("n_targets", 1);
  if (targets < 1 || targets > kMaxAttributeValue) return make_error("n_targets is {}", targets);
  const std::string agg = info.attr_string("aggregate_function", "SUM");
  static const std::pair<const char*, Aggregate> kAggregates[] = {
      {"SUM", Aggregate::sum}, {"AVERAGE", Aggregate::average}, {"MIN", Aggregate::min}, {"MAX", Aggregate::max}};
  auto found = std::find_if(std::begin(kAggregates), std::end(kAggregates), [&](const auto& p) { return agg == p.first; });
  if (found == std::end(kAggregates)) return make_error("aggregate_function '{}' is not one of SUM, AVERAGE, MIN, MAX", agg);
  r->aggregate = found->second;
  ONNXKIT_ASSIGN(r->post, parse_post_transform(info));
  ONNXKIT_ASSIGN(r->base_values, attr_doubles(info, "base_values"));
  if (!r->base_values.empty() && static_cast<int64_t>(r->base_values.size()) != targets)
    return make_error("base_values has {} entries for {} targets", r->base_values.size(), targets);
  ONNXKIT_ASSIGN(TreeAttrs attrs, read_tree_attrs(info, "target_"));
  ONNXKIT_ASSIGN(r->forest, build_forest(attrs, targets, "target_"));
  if (info.options().blocked_layout) make_compact(r->forest);
  return ComputeFn([r](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    std::vector<double> scores;
    std::vector<uint8_t> has;
    Rows rows;
    ONNXKIT_TRY(score_rows(r->forest, *x, r->aggregate, scores, has, rows));
    const int64_t k = r->forest.targets;
    Tensor& y = ctx.output(0, DataType::float32, {rows.n, k});
    float* py = y.mutable_data<float>();
    const double trees = static_cast<double>(r->forest.roots.size());
    for (int64_t i = 0; i < rows.n; ++i) {
      double* s = scores.data() + i * k;
      for (int64_t t = 0; t < k; ++t) {
        if (r->aggregate == Aggregate::average) s[t] /= trees;
        if (!r->base_values.empty()) s[t] += r->base_values[t];
      }
      apply_post_transform(r->post, s, k);
      for (int64_t t = 0; t < k; ++t) py[i * k + t] = static_cast<float>(s[t]);
    }
    return {};
  });
}

// --- TreeEnsembleClassifier -----------------------------------------------------

struct Classifier {
  Forest forest;
  PostTransform post;
  std::vector<double> base_values;
  std::vector<int64_t> int_labels;
  std::vector<std::string> string_labels;
  // Two classes whose trees all score the same one: the other's score is
  // derived from it (how converters write binary models).
  bool binary = false;
  bool weights_positive = true;
};

// What ONNX Runtime does for two classes, which converters rely on: the
// scores of one row and its label index. `has` says which classes some
// tree scored.
int64_t finish_binary(const Classifier& c, double* s, const uint8_t* has) {
  bool two = has[1] != 0;  // both columns are scores; else column 1 comes from column 0
  int shape = -1;          // how column 1 comes from column 0: 0/1 as 1 - p, 2/3 as -s (or logistic)
  const size_t bases = c.base_values.size();
  if (bases == 2) {
    if (has[1]) {
      s[1] = c.base_values[1] + s[0];
      s[0] = -s[1];
    } else {
      s[0] += c.base_values[0];
      s[1] += c.base_values[1];
    }
    two = true;
  } else if (bases == 1) {
    s[0] += c.base_values[0];
  } else {
    shape = 3;
  }
  const double positive = two ? s[1] : (has[0] ? s[0] : 0.0);
  int64_t label;
  if (c.binary) {
    const bool is_positive = c.weights_positive ? positive > 0.5 : positive > 0;
    shape = c.weights_positive ? (is_positive ? 0 : 1) : (is_positive ? 2 : 3);
    label = is_positive ? 1 : 0;
  } else {
    label = positive > 0 ? 1 : 0;
  }
  if (two) {
    apply_post_transform(c.post, s, 2);
    return label;
  }
  const double v = s[0];
  if (c.post == PostTransform::probit) {
    s[0] = probit(v);
    s[1] = 0;
  } else if (shape == 0 || shape == 1) {
    s[0] = 1.0 - v;
    s[1] = v;
  } else if (c.post == PostTransform::logistic) {
    s[0] = logistic(-v);
    s[1] = logistic(v);
  } else if (shape == 2) {
    s[0] = -v;
    s[1] = v;
  } else {
    s[0] = v;
    s[1] = -v;
  }
  return label;
}

int64_t finish_multiclass(const Classifier& c, double* s, const uint8_t* has_in, int64_t k) {
  int64_t best = -1;
  for (int64_t j = 0; j < k; ++j) {
    const bool has = has_in[j] != 0 || j < static_cast<int64_t>(c.base_values.size());
    if (j < static_cast<int64_t>(c.base_values.size())) s[j] += c.base_values[j];
    if (has && (best < 0 || s[j] > s[best])) best = j;
  }
  apply_post_transform(c.post, s, k);
  return std::max<int64_t>(best, 0);
}

Result<ComputeFn> build_classifier(const KernelInfo& info) {
  auto c = std::make_shared<Classifier>();
  c->int_labels = info.attr_ints("classlabels_int64s");
  c->string_labels = info.attr_strings("classlabels_strings");
  if (c->int_labels.empty() == c->string_labels.empty())
    return make_error("exactly one of classlabels_int64s and classlabels_strings must be given");
  const int64_t k = static_cast<int64_t>(c->int_labels.empty() ? c->string_labels.size() : c->int_labels.size());
  ONNXKIT_ASSIGN(c->post, parse_post_transform(info));
  ONNXKIT_ASSIGN(c->base_values, attr_doubles(info, "base_values"));
  if (static_cast<int64_t>(c->base_values.size()) > k)
    return make_error("base_values has {} entries for {} classes", c->base_values.size(), k);
  ONNXKIT_ASSIGN(TreeAttrs attrs, read_tree_attrs(info, "class_"));
  ONNXKIT_ASSIGN(c->forest, build_forest(attrs, k, "class_"));
  if (info.options().blocked_layout) make_compact(c->forest);
  const auto& scored = attrs.leaf_targets;
  c->binary = k == 2 && !scored.empty() && std::all_of(scored.begin(), scored.end(), [&](int64_t id) { return id == scored[0]; });
  c->weights_positive =
      std::all_of(c->forest.weight_value.begin(), c->forest.weight_value.end(), [](double w) { return w >= 0; });
  return ComputeFn([c, k](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    std::vector<double> scores;
    std::vector<uint8_t> has;
    Rows rows;
    ONNXKIT_TRY(score_rows(c->forest, *x, Aggregate::sum, scores, has, rows));
    std::vector<int64_t> label(static_cast<size_t>(rows.n));
    for (int64_t i = 0; i < rows.n; ++i) {
      double* s = scores.data() + i * k;
      const uint8_t* h = has.data() + i * k;
      label[i] = k == 2 ? finish_binary(*c, s, h) : finish_multiclass(*c, s, h, k);
    }
    write_classifier_outputs(ctx, c->int_labels, c->string_labels, label, scores, k);
    return {};
  });
}

}  // namespace

void register_tree_ensemble(KernelRegistry& r) {
  r.add(std::string(kDomain), "TreeEnsembleClassifier", 1, kLatestOpset, make_kernel(build_classifier));
  r.add(std::string(kDomain), "TreeEnsembleRegressor", 1, kLatestOpset, make_kernel(build_regressor));
  r.add(std::string(kDomain), "TreeEnsemble", 5, kLatestOpset, make_kernel(build_tree_ensemble));
}

}  // namespace onnxkit::runtime::ml
