// The layered layout of `draw` (tools/draw_layout.h): geometry checked from
// the coordinates alone, on hand-made graphs and seeded random ones.

#include <gtest/gtest.h>

#include <random>

#include "tools/draw_layout.h"

namespace onnxkit::tools::draw {
namespace {

struct Graph {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutEdge> edges;
};

Graph chain(size_t n) {
  Graph g;
  for (size_t i = 0; i < n; ++i) g.boxes.push_back({40.0 + 10 * (i % 3), 20});
  for (uint32_t i = 0; i + 1 < n; ++i) g.edges.push_back({i, i + 1});
  return g;
}

// A DAG in the image of a network: a main path with skip connections, side
// branches and fan-out, boxes of varied sizes.
Graph random_dag(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Graph g;
  std::uniform_real_distribution<double> width(30, 200), height(16, 90);
  for (size_t i = 0; i < n; ++i) g.boxes.push_back({width(rng), height(rng)});
  for (uint32_t i = 1; i < n; ++i) {
    std::uniform_int_distribution<uint32_t> back(1, std::min<uint32_t>(i, 12));
    g.edges.push_back({i - back(rng), i});
    if (rng() % 3 == 0) g.edges.push_back({i - back(rng), i});
  }
  return g;
}

bool overlap(const Point& a, const LayoutBox& sa, const Point& b, const LayoutBox& sb) {
  return a.x < b.x + sb.width && b.x < a.x + sa.width && a.y < b.y + sb.height && b.y < a.y + sa.height;
}

void expect_no_overlap(const Graph& g, const Layout& l) {
  for (size_t i = 0; i < g.boxes.size(); ++i)
    for (size_t j = i + 1; j < g.boxes.size(); ++j)
      ASSERT_FALSE(overlap(l.positions[i], g.boxes[i], l.positions[j], g.boxes[j])) << "boxes " << i << " and " << j;
}

void expect_inside(const Graph& g, const Layout& l, double margin) {
  double left = 1e300, top = 1e300, right = 0, bottom = 0;
  for (size_t i = 0; i < g.boxes.size(); ++i) {
    left = std::min(left, l.positions[i].x);
    top = std::min(top, l.positions[i].y);
    right = std::max(right, l.positions[i].x + g.boxes[i].width);
    bottom = std::max(bottom, l.positions[i].y + g.boxes[i].height);
  }
  EXPECT_NEAR(top, margin, 1e-6);
  EXPECT_LE(bottom, l.height - margin + 1e-6);
  EXPECT_GE(left, margin - 1e-6);
  EXPECT_LE(right, l.width - margin + 1e-6);
  // No empty strip wider than an edge's room on either side.
  EXPECT_LE(left, margin + 40);
  EXPECT_GE(right, l.width - margin - 40);
}

// Each route leaves its source's border and reaches its target's, on the
// side facing along the rank axis.
void expect_routes_attach(const Graph& g, const Layout& l, bool left_right) {
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const auto& route = l.routes[e];
    uint32_t a = g.edges[e].from, b = g.edges[e].to;
    if (a == b) {
      EXPECT_TRUE(route.empty());
      continue;
    }
    ASSERT_GE(route.size(), 4u);
    ASSERT_EQ(route.size() % 2, 0u);
    const Point& start = route.front();
    const Point& end = route.back();
    const Point &pa = l.positions[a], &pb = l.positions[b];
    if (!left_right) {
      EXPECT_NEAR(start.x, pa.x + g.boxes[a].width / 2, 1e-6);
      EXPECT_NEAR(end.x, pb.x + g.boxes[b].width / 2, 1e-6);
      bool down = l.ranks[a] < l.ranks[b];
      EXPECT_NEAR(start.y, down ? pa.y + g.boxes[a].height : pa.y, 1e-6) << "edge " << e;
      EXPECT_NEAR(end.y, down ? pb.y : pb.y + g.boxes[b].height, 1e-6) << "edge " << e;
    } else {
      EXPECT_NEAR(start.y, pa.y + g.boxes[a].height / 2, 1e-6);
      EXPECT_NEAR(start.x, pa.x + g.boxes[a].width, 1e-6);
      EXPECT_NEAR(end.x, pb.x, 1e-6);
    }
  }
}

TEST(DrawLayout, ChainIsOneStraightColumn) {
  Graph g = chain(8);
  Layout l = layered_layout(g.boxes, g.edges, {});
  for (size_t i = 0; i < g.boxes.size(); ++i) {
    EXPECT_EQ(l.ranks[i], i);
    EXPECT_NEAR(l.positions[i].x + g.boxes[i].width / 2, l.positions[0].x + g.boxes[0].width / 2, 1e-6);
  }
  EXPECT_EQ(l.crossings, 0u);
  expect_inside(g, l, LayoutOptions{}.margin);
  expect_routes_attach(g, l, false);
}

TEST(DrawLayout, RanksFollowDataFlowAndPullSourcesDown) {
  // 0 -> 1 -> 2 -> 3, and 4 (a source) feeding only 3: 4 sits just above 3.
  Graph g = chain(4);
  g.boxes.push_back({40, 20});
  g.edges.push_back({4, 3});
  Layout l = layered_layout(g.boxes, g.edges, {});
  EXPECT_EQ(l.ranks[3], 3u);
  EXPECT_EQ(l.ranks[4], 2u);
  expect_no_overlap(g, l);
}

TEST(DrawLayout, DiamondHasNoCrossingsAndIsSymmetric) {
  Graph g;
  for (int i = 0; i < 4; ++i) g.boxes.push_back({50, 20});
  g.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  Layout l = layered_layout(g.boxes, g.edges, {});
  EXPECT_EQ(l.crossings, 0u);
  EXPECT_EQ(l.ranks[1], l.ranks[2]);
  double top = l.positions[0].x, bottom = l.positions[3].x;
  EXPECT_NEAR(top, bottom, 1e-6);
  EXPECT_NEAR((l.positions[1].x + l.positions[2].x) / 2, top, 1e-6);
  expect_no_overlap(g, l);
}

TEST(DrawLayout, CrossingReductionUntanglesTwoChains) {
  // Two chains whose second ranks start crossed in the given order.
  Graph g;
  for (int i = 0; i < 6; ++i) g.boxes.push_back({40, 20});
  g.edges = {{0, 3}, {1, 2}, {2, 4}, {3, 5}};
  Layout l = layered_layout(g.boxes, g.edges, {});
  EXPECT_EQ(l.crossings, 0u);
  auto left_of = [&](uint32_t a, uint32_t b) { return l.positions[a].x < l.positions[b].x; };
  EXPECT_EQ(left_of(0, 1), left_of(3, 2));
}

TEST(DrawLayout, CyclesAreDrawnWithoutLoopingForever) {
  Graph g = chain(4);
  g.edges.push_back({3, 1});  // back edge
  g.edges.push_back({2, 2});  // self-loop
  Layout l = layered_layout(g.boxes, g.edges, {});
  expect_no_overlap(g, l);
  expect_routes_attach(g, l, false);
  EXPECT_TRUE(l.routes[4].empty());
}

TEST(DrawLayout, RandomGraphsDoNotOverlapAndAreDeterministic) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    Graph g = random_dag(300, seed);
    for (bool lr : {false, true}) {
      LayoutOptions options;
      options.left_right = lr;
      Layout l = layered_layout(g.boxes, g.edges, options);
      expect_no_overlap(g, l);
      expect_inside(g, l, options.margin);
      expect_routes_attach(g, l, lr);
      Layout again = layered_layout(g.boxes, g.edges, options);
      for (size_t i = 0; i < g.boxes.size(); ++i) {
        ASSERT_EQ(l.positions[i].x, again.positions[i].x);
        ASSERT_EQ(l.positions[i].y, again.positions[i].y);
      }
    }
  }
}

TEST(DrawLayout, LongEdgesFromOneBoxShareOneTrunk) {
  // Box 0 feeds the ends of ten chains of increasing length: its edges pass
  // ranks through shared points, so two edges to different depths have the
  // same route up to the shallower one's last point.
  Graph g;
  g.boxes.push_back({40, 20});
  std::vector<uint32_t> ends;
  uint32_t prev = 0;
  for (int i = 0; i < 10; ++i) {
    g.boxes.push_back({40, 20});
    uint32_t v = static_cast<uint32_t>(g.boxes.size() - 1);
    g.edges.push_back({prev, v});
    prev = v;
  }
  for (uint32_t v = 3; v <= 10; v += 3) g.edges.push_back({0, v});
  Layout l = layered_layout(g.boxes, g.edges, {});
  const auto& shorter = l.routes[10];  // 0 -> 3
  const auto& longer = l.routes[12];   // 0 -> 9
  ASSERT_LT(shorter.size(), longer.size());
  for (size_t i = 0; i + 2 < shorter.size(); ++i) {
    EXPECT_EQ(shorter[i].x, longer[i].x) << i;
    EXPECT_EQ(shorter[i].y, longer[i].y) << i;
  }
}

}  // namespace
}  // namespace onnxkit::tools::draw
