#include "analysis/dim_expr.h"

#include <cctype>
#include <vector>

namespace onnxkit::analysis {

namespace {

int degree(const std::map<std::string, int>& m) {
  int d = 0;
  for (const auto& [name, power] : m) d += power;
  return d;
}

bool is_symbol_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

bool DimExpr::Order::operator()(const Monomial& a, const Monomial& b) const {
  const int da = degree(a), db = degree(b);
  if (da != db) return da > db;
  return a > b;  // lexicographic on (symbol, power): deterministic
}

DimExpr DimExpr::constant(int64_t value) {
  DimExpr e;
  if (value != 0) e.terms_[Monomial{}] = value;
  return e;
}

DimExpr DimExpr::symbol(std::string name) {
  Monomial m;
  m[std::move(name)] = 1;
  DimExpr e;
  e.terms_[std::move(m)] = 1;
  return e;
}

std::optional<int64_t> DimExpr::constant_value() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

bool DimExpr::at_least(int64_t k) const {
  int64_t constant = 0;
  for (const auto& [mono, coef] : terms_) {
    if (mono.empty()) constant = coef;
    else if (coef < 0) return false;
  }
  return constant >= k;
}

bool DimExpr::at_most(int64_t k) const {
  int64_t constant = 0;
  for (const auto& [mono, coef] : terms_) {
    if (mono.empty()) constant = coef;
    else if (coef > 0) return false;
  }
  return constant <= k;
}

std::string DimExpr::to_string() const {
  if (terms_.empty()) return "0";
  std::string out;
  for (const auto& [mono, coef] : terms_) {
    int64_t c = coef;
    if (out.empty()) {
      if (c < 0) out += "-", c = -c;
    } else {
      out += c < 0 ? " - " : " + ";
      if (c < 0) c = -c;
    }
    std::string factors;
    for (const auto& [name, power] : mono) {
      if (!factors.empty()) factors += "*";
      factors += name;
      if (power > 1) factors += "^" + std::to_string(power);
    }
    if (factors.empty()) out += std::to_string(c);
    else if (c == 1) out += factors;
    else out += std::to_string(c) + "*" + factors;
  }
  return out;
}

DimExpr DimExpr::parse(std::string_view text) {
  // Grammar: ['-'] term (('+'|'-') term)*, term: factor ('*' factor)*,
  // factor: integer | name ['^' integer]. Anything else is one symbol.
  const DimExpr whole = symbol(std::string(text));
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && text[i] == ' ') ++i;
  };
  auto integer = [&]() -> std::optional<int64_t> {
    skip();
    size_t start = i;
    int64_t v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text[i] - '0', &v)) return std::nullopt;
      ++i;
    }
    return i > start ? std::optional(v) : std::nullopt;
  };
  DimExpr sum;
  bool first = true;
  while (true) {
    skip();
    int64_t sign = 1;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
      if (first && text[i] == '+') return whole;
      sign = text[i] == '-' ? -1 : 1;
      ++i;
    } else if (!first) {
      return whole;
    }
    DimExpr term = constant(sign);
    while (true) {
      skip();
      if (i >= text.size()) return whole;
      std::optional<DimExpr> factor;
      if (std::isdigit(static_cast<unsigned char>(text[i]))) {
        auto v = integer();
        if (!v) return whole;
        factor = constant(*v);
      } else if (is_symbol_char(text[i])) {
        size_t start = i;
        while (i < text.size() && is_symbol_char(text[i])) ++i;
        DimExpr s = symbol(std::string(text.substr(start, i - start)));
        factor = s;
        skip();
        if (i < text.size() && text[i] == '^') {
          ++i;
          auto p = integer();
          if (!p || *p < 1 || *p > 16) return whole;
          for (int64_t k = 1; k < *p && factor; ++k) factor = mul(*factor, s);
        }
      } else {
        return whole;
      }
      auto product = factor ? mul(term, *factor) : std::nullopt;
      if (!product) return whole;
      term = *product;
      skip();
      if (i < text.size() && text[i] == '*') {
        ++i;
        continue;
      }
      break;
    }
    auto s = add(sum, term);
    if (!s) return whole;
    sum = *s;
    first = false;
    skip();
    if (i >= text.size()) break;
  }
  // A plain name parses to itself; anything else must print back the same,
  // or the text was not in canonical form and stays one opaque symbol
  // (so "b*a" from a model is not silently confused with "a*b").
  return sum.to_string() == text ? sum : whole;
}

std::optional<DimExpr> DimExpr::add(const DimExpr& a, const DimExpr& b) {
  DimExpr r = a;
  for (const auto& [mono, coef] : b.terms_) {
    int64_t& c = r.terms_[mono];
    if (__builtin_add_overflow(c, coef, &c)) return std::nullopt;
    if (c == 0) r.terms_.erase(mono);
  }
  return r;
}

std::optional<DimExpr> DimExpr::sub(const DimExpr& a, const DimExpr& b) {
  auto minus = mul(b, constant(-1));
  return minus ? add(a, *minus) : std::nullopt;
}

std::optional<DimExpr> DimExpr::mul(const DimExpr& a, const DimExpr& b) {
  DimExpr r;
  for (const auto& [ma, ca] : a.terms_)
    for (const auto& [mb, cb] : b.terms_) {
      Monomial m = ma;
      for (const auto& [name, power] : mb) m[name] += power;
      int64_t c = 0;
      if (__builtin_mul_overflow(ca, cb, &c)) return std::nullopt;
      int64_t& slot = r.terms_[m];
      if (__builtin_add_overflow(slot, c, &slot)) return std::nullopt;
      if (slot == 0) r.terms_.erase(m);
    }
  return r;
}

std::optional<DimExpr> DimExpr::div_exact(const DimExpr& a, const DimExpr& b) {
  if (b.terms_.empty()) return std::nullopt;
  // Long division by the leading term; when b divides a, every step's
  // leading term divides (lead(q*b) = lead(q)*lead(b)) and the remainder is 0.
  const auto& [lead_mono, lead_coef] = *b.terms_.begin();
  DimExpr quotient, rest = a;
  for (int steps = 0; !rest.terms_.empty(); ++steps) {
    if (steps > 64) return std::nullopt;
    const auto& [mono, coef] = *rest.terms_.begin();
    if (coef % lead_coef != 0) return std::nullopt;
    Monomial m = mono;
    for (const auto& [name, power] : lead_mono) {
      auto found = m.find(name);
      if (found == m.end() || found->second < power) return std::nullopt;
      if ((found->second -= power) == 0) m.erase(found);
    }
    DimExpr t;
    t.terms_[m] = coef / lead_coef;
    auto q = add(quotient, t);
    auto tb = mul(t, b);
    auto r = tb ? sub(rest, *tb) : std::nullopt;
    if (!q || !r) return std::nullopt;
    quotient = *q;
    rest = *r;
  }
  return quotient;
}

std::optional<DimExpr> DimExpr::div_trunc(const DimExpr& a, const DimExpr& b) {
  auto x = a.constant_value(), y = b.constant_value();
  if (x && y) {
    if (*y == 0 || (*x == INT64_MIN && *y == -1)) return std::nullopt;
    return constant(*x / *y);
  }
  if (y && *y == 0) return std::nullopt;
  if (auto q = div_exact(a, b)) return q;
  return symbol("(" + a.to_string() + ")/(" + b.to_string() + ")");
}

}  // namespace onnxkit::analysis
