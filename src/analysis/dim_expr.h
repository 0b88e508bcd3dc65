#pragma once
// A tensor dim as an integer polynomial over symbolic dims ("batch",
// "2*batch", "batch*seq + 1"), in a canonical form: two expressions that are
// equal as polynomials compare equal and print the same. Division is exact
// or nothing: a/b is a polynomial only where b divides a for every value of
// the symbols (6*batch/3 = 2*batch; batch/2 is not). A dim that is none of
// these (floor of a non-exact quotient, a data-dependent count) is an
// opaque symbol of its own.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace onnxkit::analysis {

class DimExpr {
 public:
  DimExpr() = default;  // 0
  static DimExpr constant(int64_t value);
  static DimExpr symbol(std::string name);
  // The expression a dim_param spells (as to_string writes it); a name that
  // is not such an expression ("N.1", "floor(b/2)") is one symbol.
  static DimExpr parse(std::string_view text);

  std::optional<int64_t> constant_value() const;
  bool is_constant() const { return constant_value().has_value(); }
  std::string to_string() const;
  // Whether the expression is >= k (at_least) or <= k (at_most) for every
  // non-negative value of its symbols, as dims are: batch + 1 >= 1, so it
  // never equals -1. False when it depends on the values.
  bool at_least(int64_t k) const;
  bool at_most(int64_t k) const;

  // nullopt on int64 overflow of a coefficient.
  static std::optional<DimExpr> add(const DimExpr& a, const DimExpr& b);
  static std::optional<DimExpr> sub(const DimExpr& a, const DimExpr& b);
  static std::optional<DimExpr> mul(const DimExpr& a, const DimExpr& b);
  // a / b when b divides a exactly as polynomials; nullopt otherwise.
  static std::optional<DimExpr> div_exact(const DimExpr& a, const DimExpr& b);
  // a / b as int64 Div computes it (truncating): exact division, numbers,
  // or else an opaque symbol naming the quotient, so equal quotients match.
  static std::optional<DimExpr> div_trunc(const DimExpr& a, const DimExpr& b);

  bool operator==(const DimExpr&) const = default;

 private:
  using Monomial = std::map<std::string, int>;  // symbol -> power (>0); {} is 1
  // Monomials in descending order (highest degree first, then by name), so
  // the leading term of long division is the first.
  struct Order {
    bool operator()(const Monomial& a, const Monomial& b) const;
  };
  std::map<Monomial, int64_t, Order> terms_;  // no zero coefficients
};

}  // namespace onnxkit::analysis
