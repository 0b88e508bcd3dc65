#include "tools/draw_layout.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace onnxkit::tools::draw {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr int kOrderSweeps = 4;      // down + up pairs of barycentric sweeps
constexpr int kPlacementSweeps = 4;  // down + up pairs of coordinate sweeps
constexpr double kDummyBreadth = 4;  // room an edge takes where it passes a rank
constexpr double kDummyWeight = 4;   // long edges resist bending more than boxes move

// Adjacency in compressed rows: the neighbours of v are items[first[v]..first[v+1]).
struct Adjacency {
  std::vector<uint32_t> first, items;

  template <class Pairs> static Adjacency build(size_t n, const Pairs& pairs, bool reverse) {
    Adjacency a;
    a.first.assign(n + 1, 0);
    for (const auto& [u, w] : pairs) ++a.first[(reverse ? w : u) + 1];
    std::partial_sum(a.first.begin(), a.first.end(), a.first.begin());
    a.items.resize(pairs.size());
    std::vector<uint32_t> fill(a.first.begin(), a.first.end() - 1);
    for (const auto& [u, w] : pairs) {
      uint32_t from = reverse ? w : u, to = reverse ? u : w;
      a.items[fill[from]++] = to;
    }
    return a;
  }
  const uint32_t* begin(uint32_t v) const { return items.data() + first[v]; }
  const uint32_t* end(uint32_t v) const { return items.data() + first[v + 1]; }
  bool empty(uint32_t v) const { return first[v] == first[v + 1]; }
};

// A topological order of the boxes (Kahn's, first-come first-served, so the
// graph's own order decides ties). On a cycle, the lowest-numbered box left
// goes next; edges pointing back against the order are the ones reversed.
std::vector<uint32_t> order_breaking_cycles(size_t n, const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  Adjacency out = Adjacency::build(n, pairs, false);
  std::vector<uint32_t> indegree(n, 0);
  for (const auto& [u, w] : pairs) ++indegree[w];
  std::vector<uint32_t> order;
  order.reserve(n);
  std::vector<char> placed(n, 0);
  size_t head = 0, cursor = 0;
  auto place = [&](uint32_t v) {
    placed[v] = 1;
    order.push_back(v);
  };
  for (uint32_t v = 0; v < n; ++v)
    if (indegree[v] == 0) place(v);
  while (order.size() < n || head < order.size()) {
    if (head == order.size()) {  // stuck on a cycle
      while (placed[cursor]) ++cursor;
      place(static_cast<uint32_t>(cursor));
    }
    uint32_t v = order[head++];
    for (const uint32_t* w = out.begin(v); w != out.end(v); ++w)
      if (!placed[*w] && --indegree[*w] == 0) place(*w);
  }
  return order;
}

// Inversions of `seq` (values below `bound`), by a Fenwick tree.
size_t count_inversions(const std::vector<uint32_t>& seq, uint32_t bound) {
  std::vector<uint32_t> tree(bound + 1, 0);
  size_t inversions = 0, seen = 0;
  for (uint32_t v : seq) {
    size_t not_greater = 0;
    for (uint32_t i = v + 1; i > 0; i -= i & -i) not_greater += tree[i];
    inversions += seen - not_greater;
    for (uint32_t i = v + 1; i <= bound; i += i & -i) ++tree[i];
    ++seen;
  }
  return inversions;
}

// The layered graph: boxes and dummy points, each on a rank, with edges only
// between adjacent ranks.
struct Layered {
  std::vector<uint32_t> rank;
  std::vector<double> breadth, depth, weight;
  std::vector<std::pair<uint32_t, uint32_t>> links;  // upper -> lower
  Adjacency up, down;                                // neighbours above, below
  std::vector<std::vector<uint32_t>> layers;         // nodes of each rank, in order
  std::vector<uint32_t> slot;                        // index within its layer

  size_t size() const { return rank.size(); }

  void renumber(uint32_t r) {
    for (uint32_t i = 0; i < layers[r].size(); ++i) slot[layers[r][i]] = i;
  }

  size_t crossings_below(uint32_t r) const {
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t v : layers[r])
      for (const uint32_t* w = down.begin(v); w != down.end(v); ++w) pairs.emplace_back(slot[v], slot[*w]);
    std::sort(pairs.begin(), pairs.end());
    std::vector<uint32_t> seq(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) seq[i] = pairs[i].second;
    return count_inversions(seq, static_cast<uint32_t>(layers[r + 1].size()));
  }

  size_t crossings() const {
    size_t total = 0;
    for (uint32_t r = 0; r + 1 < layers.size(); ++r) total += crossings_below(r);
    return total;
  }

  // Reorders layer r by the mean slot of each node's neighbours in the
  // adjacent layer; nodes without any keep their slot as their key.
  void sort_by_barycenter(uint32_t r, const Adjacency& toward) {
    std::vector<std::pair<double, uint32_t>> keyed;
    keyed.reserve(layers[r].size());
    for (uint32_t v : layers[r]) {
      double sum = 0;
      size_t count = 0;
      for (const uint32_t* w = toward.begin(v); w != toward.end(v); ++w, ++count) sum += slot[*w];
      keyed.emplace_back(count > 0 ? sum / count : static_cast<double>(slot[v]), v);
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return slot[a.second] < slot[b.second];
    });
    for (size_t i = 0; i < keyed.size(); ++i) layers[r][i] = keyed[i].second;
    renumber(r);
  }
};

// Positions x (in layer order) nearest `aim` in the weighted least-squares
// sense such that x[i+1] - x[i] >= gap[i]: with y[i] = x[i] - (gap[0] + ... +
// gap[i-1]) the constraint is y non-decreasing, which pooling adjacent
// violators solves exactly in one pass.
void place_layer(const std::vector<double>& aim, const std::vector<double>& gap, const std::vector<double>& weight,
                 std::vector<double>& x) {
  const size_t n = aim.size();
  std::vector<double> offset(n, 0);
  for (size_t i = 1; i < n; ++i) offset[i] = offset[i - 1] + gap[i - 1];
  struct Block {
    double sum_w, sum_wy;
    size_t count;
    double value() const { return sum_wy / sum_w; }
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < n; ++i) {
    blocks.push_back({weight[i], weight[i] * (aim[i] - offset[i]), 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].value() > blocks.back().value()) {
      Block top = blocks.back();
      blocks.pop_back();
      blocks.back().sum_w += top.sum_w;
      blocks.back().sum_wy += top.sum_wy;
      blocks.back().count += top.count;
    }
  }
  size_t i = 0;
  for (const Block& b : blocks)
    for (size_t k = 0; k < b.count; ++k, ++i) x[i] = b.value() + offset[i];
}

double median_of(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  size_t m = values.size() / 2;
  return values.size() % 2 == 1 ? values[m] : (values[m - 1] + values[m]) / 2;
}

}  // namespace

Layout layered_layout(const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges, const LayoutOptions& options) {
  const size_t n = boxes.size();
  Layout result;
  result.positions.resize(n);
  result.routes.resize(edges.size());
  result.ranks.assign(n, 0);
  if (n == 0) {
    result.width = result.height = 2 * options.margin;
    return result;
  }

  // 1. Order and orientation: every laid-out edge runs from earlier to later.
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  pairs.reserve(edges.size());
  for (const LayoutEdge& e : edges)
    if (e.from != e.to) pairs.emplace_back(e.from, e.to);
  std::vector<uint32_t> order = order_breaking_cycles(n, pairs);
  std::vector<uint32_t> position(n);
  for (uint32_t i = 0; i < n; ++i) position[order[i]] = i;
  std::vector<bool> reversed(edges.size(), false);
  std::vector<std::pair<uint32_t, uint32_t>> forward;  // (upper, lower) per non-loop edge
  forward.reserve(pairs.size());
  for (size_t i = 0; i < edges.size(); ++i) {
    const LayoutEdge& e = edges[i];
    if (e.from == e.to) continue;
    reversed[i] = position[e.from] > position[e.to];
    forward.push_back(reversed[i] ? std::make_pair(e.to, e.from) : std::make_pair(e.from, e.to));
  }
  Adjacency out = Adjacency::build(n, forward, false);

  // 2. Ranks: longest path from the sources, then pulled toward consumers.
  std::vector<uint32_t> rank(n, 0);
  for (uint32_t v : order)
    for (const uint32_t* w = out.begin(v); w != out.end(v); ++w) rank[*w] = std::max(rank[*w], rank[v] + 1);
  for (size_t i = n; i-- > 0;) {
    uint32_t v = order[i];
    if (out.empty(v)) continue;
    uint32_t lowest = UINT32_MAX;
    for (const uint32_t* w = out.begin(v); w != out.end(v); ++w) lowest = std::min(lowest, rank[*w]);
    rank[v] = std::max(rank[v], lowest - 1);
  }

  // 3. The layered graph: boxes, then each box's trunk of dummy points down
  // to the rank above its farthest consumer.
  const bool lr = options.left_right;
  Layered g;
  g.rank = rank;
  g.breadth.resize(n);
  g.depth.resize(n);
  g.weight.assign(n, 1.0);
  for (size_t v = 0; v < n; ++v) {
    g.breadth[v] = lr ? boxes[v].height : boxes[v].width;
    g.depth[v] = lr ? boxes[v].width : boxes[v].height;
  }
  std::vector<uint32_t> trunk(n, kNone);  // first dummy of v's trunk (at rank[v] + 1)
  std::vector<uint32_t> trunk_length(n, 0);
  for (uint32_t v = 0; v < n; ++v) {
    uint32_t farthest = rank[v];
    for (const uint32_t* w = out.begin(v); w != out.end(v); ++w) farthest = std::max(farthest, rank[*w]);
    if (farthest <= rank[v] + 1) continue;
    trunk[v] = static_cast<uint32_t>(g.size());
    trunk_length[v] = farthest - rank[v] - 1;
    for (uint32_t r = rank[v] + 1; r < farthest; ++r) {
      uint32_t d = static_cast<uint32_t>(g.size());
      g.rank.push_back(r);
      g.breadth.push_back(kDummyBreadth);
      g.depth.push_back(0);
      g.weight.push_back(kDummyWeight);
      g.links.emplace_back(r == rank[v] + 1 ? v : d - 1, d);
    }
  }
  // The point an edge into w leaves from: its source, or the source's trunk
  // at the rank above w.
  auto feeder = [&](uint32_t v, uint32_t w) { return rank[w] == rank[v] + 1 ? v : trunk[v] + (rank[w] - rank[v] - 2); };
  for (uint32_t v = 0; v < n; ++v)
    for (const uint32_t* w = out.begin(v); w != out.end(v); ++w) g.links.emplace_back(feeder(v, *w), *w);
  std::sort(g.links.begin(), g.links.end());
  g.links.erase(std::unique(g.links.begin(), g.links.end()), g.links.end());
  g.up = Adjacency::build(g.size(), g.links, true);
  g.down = Adjacency::build(g.size(), g.links, false);

  // 4. Crossing reduction. The first order follows the topological one
  // (a dummy right after its box), then barycentric sweeps.
  uint32_t rank_count = 1 + *std::max_element(g.rank.begin(), g.rank.end());
  g.layers.assign(rank_count, {});
  g.slot.assign(g.size(), 0);
  for (uint32_t v : order) {
    g.layers[rank[v]].push_back(v);
    for (uint32_t k = 0; k < trunk_length[v]; ++k) g.layers[rank[v] + 1 + k].push_back(trunk[v] + k);
  }
  for (uint32_t r = 0; r < rank_count; ++r) g.renumber(r);
  size_t best = g.crossings();
  std::vector<std::vector<uint32_t>> best_layers = g.layers;
  for (int sweep = 0; sweep < kOrderSweeps && best > 0; ++sweep) {
    for (uint32_t r = 1; r < rank_count; ++r) g.sort_by_barycenter(r, g.up);
    for (uint32_t r = rank_count - 1; r-- > 0;) g.sort_by_barycenter(r, g.down);
    size_t now = g.crossings();
    if (now < best) {
      best = now;
      best_layers = g.layers;
    }
  }
  g.layers = std::move(best_layers);
  for (uint32_t r = 0; r < rank_count; ++r) g.renumber(r);
  result.crossings = best;

  // 5. Coordinates across the rank axis (centres).
  std::vector<double> x(g.size(), 0);
  auto gap_between = [&](uint32_t a, uint32_t b) {
    bool boxes_both = a < n && b < n;
    return (g.breadth[a] + g.breadth[b]) / 2 + (boxes_both ? options.node_gap : options.node_gap / 4);
  };
  for (uint32_t r = 0; r < rank_count; ++r) {
    const auto& layer = g.layers[r];
    double at = 0;
    for (size_t i = 0; i < layer.size(); ++i) {
      if (i > 0) at += gap_between(layer[i - 1], layer[i]);
      x[layer[i]] = at;
    }
    for (uint32_t v : layer) x[v] -= at / 2;
  }
  auto sweep_layer = [&](uint32_t r, bool use_up, bool use_down) {
    const auto& layer = g.layers[r];
    std::vector<double> aim(layer.size()), gap(layer.size(), 0), weight(layer.size()), placed(layer.size());
    std::vector<double> around;
    for (size_t i = 0; i < layer.size(); ++i) {
      uint32_t v = layer[i];
      around.clear();
      if (use_up)
        for (const uint32_t* w = g.up.begin(v); w != g.up.end(v); ++w) around.push_back(x[*w]);
      if (use_down)
        for (const uint32_t* w = g.down.begin(v); w != g.down.end(v); ++w) around.push_back(x[*w]);
      aim[i] = around.empty() ? x[v] : median_of(around);
      weight[i] = g.weight[v];
      if (i + 1 < layer.size()) gap[i] = gap_between(v, layer[i + 1]);
    }
    place_layer(aim, gap, weight, placed);
    for (size_t i = 0; i < layer.size(); ++i) x[layer[i]] = placed[i];
  };
  for (int sweep = 0; sweep < kPlacementSweeps; ++sweep) {
    for (uint32_t r = 1; r < rank_count; ++r) sweep_layer(r, true, false);
    for (uint32_t r = rank_count - 1; r-- > 0;) sweep_layer(r, false, true);
  }
  for (uint32_t r = 0; r < rank_count; ++r) sweep_layer(r, true, true);

  // Depth: each rank a band as deep as its deepest box; boxes centred in it.
  std::vector<double> band_start(rank_count, 0), band_depth(rank_count, 0);
  for (size_t v = 0; v < g.size(); ++v) band_depth[g.rank[v]] = std::max(band_depth[g.rank[v]], g.depth[v]);
  double at = options.margin;
  for (uint32_t r = 0; r < rank_count; ++r) {
    band_start[r] = at;
    at += band_depth[r] + options.rank_gap;
  }
  const double total_depth = at - options.rank_gap + options.margin;
  double low = INFINITY, high = -INFINITY;
  for (size_t v = 0; v < g.size(); ++v) {
    low = std::min(low, x[v] - g.breadth[v] / 2);
    high = std::max(high, x[v] + g.breadth[v] / 2);
  }
  for (double& c : x) c += options.margin - low;
  const double total_breadth = high - low + 2 * options.margin;

  auto point = [&](double across, double along) { return lr ? Point{along, across} : Point{across, along}; };
  for (uint32_t v = 0; v < n; ++v) {
    double top = band_start[rank[v]] + (band_depth[rank[v]] - g.depth[v]) / 2;
    result.positions[v] = point(x[v] - g.breadth[v] / 2, top);
    result.ranks[v] = rank[v];
  }

  // Routes, in layout direction, then flipped for reversed edges.
  for (size_t i = 0; i < edges.size(); ++i) {
    uint32_t a = edges[i].from, b = edges[i].to;
    if (a == b) continue;
    if (reversed[i]) std::swap(a, b);
    auto& route = result.routes[i];
    double a_end = band_start[rank[a]] + (band_depth[rank[a]] + g.depth[a]) / 2;
    route.push_back(point(x[a], a_end));
    route.push_back(point(x[a], band_start[rank[a]] + band_depth[rank[a]]));
    for (uint32_t r = rank[a] + 1; r < rank[b]; ++r) {
      uint32_t d = trunk[a] + (r - rank[a] - 1);
      route.push_back(point(x[d], band_start[r]));
      route.push_back(point(x[d], band_start[r] + band_depth[r]));
    }
    double b_start = band_start[rank[b]] + (band_depth[rank[b]] - g.depth[b]) / 2;
    route.push_back(point(x[b], band_start[rank[b]]));
    route.push_back(point(x[b], b_start));
    if (reversed[i]) std::reverse(route.begin(), route.end());
  }
  result.width = lr ? total_depth : total_breadth;
  result.height = lr ? total_breadth : total_depth;
  return result;
}

}  // namespace onnxkit::tools::draw
