// The dim algebra against results worked by hand.
#include <gtest/gtest.h>

#include "analysis/dim_expr.h"

namespace onnxkit::analysis {
namespace {

DimExpr e(const char* text) { return DimExpr::parse(text); }
DimExpr n(int64_t v) { return DimExpr::constant(v); }

TEST(DimExpr, CanonicalFormMakesEqualPolynomialsEqual) {
  DimExpr b = DimExpr::symbol("batch"), s = DimExpr::symbol("seq");
  // (batch + 1) * (batch - 1) = batch^2 - 1, however it was built.
  auto lhs = DimExpr::mul(*DimExpr::add(b, n(1)), *DimExpr::sub(b, n(1)));
  ASSERT_TRUE(lhs);
  EXPECT_EQ(lhs->to_string(), "batch^2 - 1");
  EXPECT_EQ(*lhs, e("batch^2 - 1"));
  // seq*batch and batch*seq are one monomial.
  EXPECT_EQ(*DimExpr::mul(s, b), *DimExpr::mul(b, s));
  EXPECT_EQ(DimExpr::mul(s, b)->to_string(), "batch*seq");
  // 2*batch + batch - 3*batch = 0
  auto zero = DimExpr::sub(*DimExpr::add(*DimExpr::mul(n(2), b), b), *DimExpr::mul(n(3), b));
  EXPECT_EQ(zero->constant_value(), 0);
  EXPECT_EQ(DimExpr::add(n(2), n(3))->constant_value(), 5);
}

TEST(DimExpr, ParsePrintsBackWhatItReads) {
  for (const char* text : {"batch", "2*batch", "batch*seq + 1", "-batch + 4", "N^2*W - 3", "7", "unk__54"})
    EXPECT_EQ(e(text).to_string(), text) << text;
  // Not an expression in canonical form: one opaque symbol, equal only to itself.
  for (const char* text : {"N.1", "b*a", "floor(b/2)", "batch size", "2*", "(b)/(2)"}) {
    DimExpr opaque = e(text);
    EXPECT_EQ(opaque.to_string(), text);
    EXPECT_FALSE(opaque.is_constant());
    EXPECT_EQ(opaque, DimExpr::symbol(text));
  }
  EXPECT_NE(e("b*a"), e("a*b"));
}

TEST(DimExpr, ExactDivisionOnlyWhereItDivides) {
  // 6*batch / 3 = 2*batch; batch*116*28*28 / (2*28*28) = 58*batch.
  EXPECT_EQ(*DimExpr::div_exact(e("6*batch"), n(3)), e("2*batch"));
  EXPECT_EQ(*DimExpr::div_exact(e("90944*batch"), e("1568")), e("58*batch"));
  // (b^2 - 1) / (b + 1) = b - 1, by long division.
  EXPECT_EQ(*DimExpr::div_exact(e("b^2 - 1"), e("b + 1")), e("b - 1"));
  // batch*seq*768 / (seq*12) = 64*batch.
  EXPECT_EQ(*DimExpr::div_exact(e("768*batch*seq"), e("12*seq")), e("64*batch"));
  // Does not divide for every batch: nothing.
  EXPECT_FALSE(DimExpr::div_exact(e("batch"), n(2)));
  EXPECT_FALSE(DimExpr::div_exact(e("2*batch + 1"), n(2)));
  EXPECT_FALSE(DimExpr::div_exact(e("b^2 + 1"), e("b + 1")));
  EXPECT_FALSE(DimExpr::div_exact(e("b"), n(0)));
  // Int64 Div truncates toward zero on numbers; otherwise an opaque quotient,
  // the same one for the same operands.
  EXPECT_EQ(DimExpr::div_trunc(n(-7), n(2))->constant_value(), -3);
  EXPECT_EQ(*DimExpr::div_trunc(e("batch"), n(2)), *DimExpr::div_trunc(e("batch"), n(2)));
  EXPECT_NE(*DimExpr::div_trunc(e("batch"), n(2)), *DimExpr::div_trunc(e("batch"), n(3)));
  EXPECT_FALSE(DimExpr::div_trunc(e("batch"), n(0)));
}

TEST(DimExpr, OverflowGivesNothing) {
  const int64_t big = int64_t{1} << 62;
  EXPECT_FALSE(DimExpr::mul(n(big), n(4)));
  EXPECT_FALSE(DimExpr::add(*DimExpr::mul(n(big), e("b")), *DimExpr::mul(n(big), e("b"))));
  EXPECT_TRUE(DimExpr::mul(n(big), n(1)));
}

}  // namespace
}  // namespace onnxkit::analysis
