// Einsum: the equation is parsed when the kernel is built; at run time each
// operand becomes a labelled strided view (a repeated label is a diagonal:
// its strides add up), labels nobody needs later are summed out, and the
// operands are contracted left to right, each pair as a batch of gemm calls.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "runtime/kernels/math/math.h"

namespace onnxkit::runtime::math {
namespace {

// Letters are their own character codes; the dims an ellipsis stands for get
// codes from kEllipsis up, aligned to the right like numpy broadcasting.
constexpr int kEllipsis = 128;
constexpr int kEllipsisToken = -1;

std::string label_name(int label) {
  return label >= kEllipsis ? fmt::format("... dim {}", label - kEllipsis) : fmt::format("'{}'", static_cast<char>(label));
}

struct Equation {
  std::vector<std::vector<int>> inputs;  // letters and kEllipsisToken, per term
  bool explicit_output = false;
  std::vector<int> output;
};

Result<std::vector<int>> parse_term(std::string_view term, std::string_view where) {
  std::vector<int> tokens;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char ch = term[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      tokens.push_back(ch);
    } else if (ch == '.') {
      if (term.substr(i, 3) != "...") return make_error("{} has a '.' that does not start '...'", where);
      if (ellipsis) return make_error("{} has more than one '...'", where);
      ellipsis = true;
      tokens.push_back(kEllipsisToken);
      i += 2;
    } else {
      return make_error("{} has an invalid character '{}' (labels are letters a-z, A-Z)", where, ch);
    }
  }
  return tokens;
}

Result<Equation> parse_equation(const std::string& text) {
  std::string eq;
  for (char ch : text)
    if (ch != ' ' && ch != '\t' && ch != '\n') eq.push_back(ch);
  Equation parsed;
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 2) != std::string::npos)
    return make_error("equation '{}' has more than one '->'", text);
  const std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    const std::string term = lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ONNXKIT_ASSIGN(auto tokens,
                   parse_term(term, fmt::format("term {} ('{}') of equation '{}'", parsed.inputs.size(), term, text)));
    parsed.inputs.push_back(std::move(tokens));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    parsed.explicit_output = true;
    const std::string rhs = eq.substr(arrow + 2);
    ONNXKIT_ASSIGN(parsed.output, parse_term(rhs, fmt::format("the output ('{}') of equation '{}'", rhs, text)));
    std::set<int> seen;
    for (int t : parsed.output) {
      if (!seen.insert(t).second) return make_error("the output of equation '{}' repeats {}", text, label_name(t));
      if (t == kEllipsisToken) continue;
      bool found = false;
      for (const auto& in : parsed.inputs) found = found || std::find(in.begin(), in.end(), t) != in.end();
      if (!found) return make_error("the output of equation '{}' has label {}, which no input has", text, label_name(t));
    }
  }
  return parsed;
}

// A labelled strided view over a buffer it may own.
template <class C> struct View {
  std::shared_ptr<const std::vector<C>> owner;
  const C* data = nullptr;
  std::vector<int64_t> dims, strides;
  std::vector<int> labels;

  int64_t numel() const { return shape_size(dims); }
  int find(int label) const {
    auto it = std::find(labels.begin(), labels.end(), label);
    return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
  }
};

template <class C> C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <class C> View<C> owned(std::vector<C> data, std::vector<int64_t> dims, std::vector<int> labels) {
  View<C> v;
  auto buffer = std::make_shared<std::vector<C>>(std::move(data));
  v.data = buffer->data();
  v.owner = std::move(buffer);
  v.strides = contiguous_strides(dims);
  v.dims = std::move(dims);
  v.labels = std::move(labels);
  return v;
}

// Calls f(source offset, destination index) over `dims` in row-major order,
// the source read through `strides`.
template <class F> void for_each_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, F&& f) {
  const int64_t total = shape_size(dims);
  if (total == 0) return;
  const size_t rank = dims.size();
  if (rank == 0) {
    f(int64_t(0), int64_t(0));
    return;
  }
  std::vector<int64_t> index(rank, 0);
  const int64_t inner = dims[rank - 1], step = strides[rank - 1];
  int64_t offset = 0;
  for (int64_t out = 0; out < total; out += inner) {
    for (int64_t j = 0; j < inner; ++j) f(offset + j * step, out + j);
    for (size_t d = rank - 1; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

// True when the view is packed row-major in the order `order` of its labels.
template <class C> bool packed_in(const View<C>& v, const std::vector<int>& order) {
  int64_t stride = 1;
  for (size_t i = order.size(); i-- > 0;) {
    const int d = v.find(order[i]);
    if (v.dims[d] != 1 && v.strides[d] != stride) return false;
    stride *= v.dims[d];
  }
  return true;
}

// The view's elements packed row-major with its labels in `order`.
template <class C> View<C> materialize(const View<C>& v, const std::vector<int>& order) {
  std::vector<int64_t> dims, strides;
  for (int label : order) {
    const int d = v.find(label);
    dims.push_back(v.dims[d]);
    strides.push_back(v.strides[d]);
  }
  std::vector<C> data(static_cast<size_t>(shape_size(dims)));
  for_each_index(dims, strides, [&](int64_t src, int64_t dst) { data[dst] = v.data[src]; });
  return owned(std::move(data), std::move(dims), order);
}

// Sums the view over `gone`, keeping the other labels in their order.
template <class C> View<C> sum_out(const View<C>& v, const std::set<int>& gone) {
  std::vector<int> kept;
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < v.labels.size(); ++d)
    if (!gone.count(v.labels[d])) kept.push_back(v.labels[d]), kept_dims.push_back(v.dims[d]);
  if (kept.size() == v.labels.size()) return v;
  // Walk the summed labels innermost so each output element is one run.
  std::vector<int> order = kept;
  for (size_t d = 0; d < v.labels.size(); ++d)
    if (gone.count(v.labels[d])) order.push_back(v.labels[d]);
  std::vector<int64_t> dims, strides;
  for (int label : order) {
    const int d = v.find(label);
    dims.push_back(v.dims[d]);
    strides.push_back(v.strides[d]);
  }
  const int64_t outputs = shape_size(kept_dims);
  const int64_t run = outputs == 0 ? 0 : shape_size(dims) / outputs;
  std::vector<C> data(static_cast<size_t>(outputs), C(0));
  if (run > 0)
    for_each_index(dims, strides, [&](int64_t src, int64_t i) { data[i / run] = wrap_add(data[i / run], v.data[src]); });
  return owned(std::move(data), std::move(kept_dims), std::move(kept));
}

template <class C>
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const C* a, int64_t lda, const C* b, int64_t ldb, C* c) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    gemm(ta, tb, m, n, k, C(1), a, lda, b, ldb, C(0), c, n);
  } else {
    gemm_reference<C, C>(ta, tb, m, n, k, C(1), a, lda, b, ldb, C(0), c, n);
  }
}

// Contracts two views; labels in `needed` survive, shared labels not in it
// are summed over. The result is [batch..., a-only..., b-only...].
template <class C> Result<View<C>> contract(View<C> a, View<C> b, const std::set<int>& needed) {
  // Labels one side alone has and nobody needs go first.
  {
    std::set<int> gone_a, gone_b;
    for (int l : a.labels)
      if (!needed.count(l) && b.find(l) < 0) gone_a.insert(l);
    for (int l : b.labels)
      if (!needed.count(l) && a.find(l) < 0) gone_b.insert(l);
    // A shared summed label stretched on one side (size 1 under '...'):
    // sum the other side over it, the stretched side then just drops it.
    for (size_t d = 0; d < a.labels.size(); ++d) {
      const int l = a.labels[d], e = b.find(l);
      if (e < 0 || needed.count(l) || a.dims[d] == b.dims[e]) continue;
      (a.dims[d] == 1 ? gone_b : gone_a).insert(l);
    }
    a = sum_out(a, gone_a);
    b = sum_out(b, gone_b);
    // Drop the stretched side's size-1 copy.
    std::set<int> drop_a, drop_b;
    for (int l : a.labels)
      if (!needed.count(l) && b.find(l) < 0) drop_a.insert(l);
    for (int l : b.labels)
      if (!needed.count(l) && a.find(l) < 0) drop_b.insert(l);
    a = sum_out(a, drop_a);
    b = sum_out(b, drop_b);
  }
  std::vector<int> batch, rows, cols, inner;
  for (int l : a.labels) {
    const bool shared = b.find(l) >= 0;
    if (shared && needed.count(l)) batch.push_back(l);
    else if (shared) inner.push_back(l);
    else rows.push_back(l);
  }
  for (int l : b.labels)
    if (a.find(l) < 0) cols.push_back(l);
  auto size_of = [](const View<C>& v, const std::vector<int>& labels) {
    int64_t s = 1;
    for (int l : labels) s *= v.dims[v.find(l)];
    return s;
  };
  const int64_t m = size_of(a, rows), n = size_of(b, cols), k = size_of(a, inner);

  auto concat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  // Operands packed as [batch, m, k] and [batch, k, n], or their transposes
  // when already so: gemm reads either.
  bool ta = false, tb = false;
  if (packed_in(a, concat(batch, rows, inner))) {
  } else if (packed_in(a, concat(batch, inner, rows))) {
    ta = true;
  } else {
    a = materialize(a, concat(batch, rows, inner));
  }
  if (packed_in(b, concat(batch, inner, cols))) {
  } else if (packed_in(b, concat(batch, cols, inner))) {
    tb = true;
  } else {
    b = materialize(b, concat(batch, inner, cols));
  }

  MatMulPlan plan;
  plan.m = m, plan.n = n, plan.k = k;
  std::vector<int64_t> batch_dims;
  for (int l : batch) batch_dims.push_back(std::max(a.dims[a.find(l)], b.dims[b.find(l)]));
  plan.batch = shape_size(batch_dims);
  plan.a_offset.assign(plan.batch, 0);
  plan.b_offset.assign(plan.batch, 0);
  plan.a_batch.assign(plan.batch, 0);
  plan.b_batch.assign(plan.batch, 0);
  {
    std::vector<int64_t> index(batch.size(), 0);
    for (int64_t e = 0; e < plan.batch; ++e) {
      for (size_t d = 0; d < batch.size(); ++d) {
        const int da = a.find(batch[d]), db = b.find(batch[d]);
        if (a.dims[da] != 1) plan.a_offset[e] += index[d] * a.strides[da];
        if (b.dims[db] != 1) plan.b_offset[e] += index[d] * b.strides[db];
      }
      for (size_t d = batch.size(); d-- > 0;) {
        if (++index[d] < batch_dims[d]) break;
        index[d] = 0;
      }
    }
  }
  std::vector<int64_t> out_dims = batch_dims;
  for (int l : rows) out_dims.push_back(a.dims[a.find(l)]);
  for (int l : cols) out_dims.push_back(b.dims[b.find(l)]);
  ONNXKIT_TRY(checked_size(out_dims, "an intermediate product"));
  std::vector<C> out(static_cast<size_t>(shape_size(out_dims)));
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  for_each_matmul(plan, [&](int64_t, int64_t ao, int64_t bo, int64_t co, int64_t) {
    product<C>(ta, tb, m, n, k, a.data + ao, lda, b.data + bo, ldb, out.data() + co);
  });
  return owned(std::move(out), std::move(out_dims), concat(batch, rows, cols));
}

template <class T> Status run_einsum(const Equation& eq, const std::vector<const Tensor*>& inputs, KernelContext& ctx) {
  using C = compute_t<T>;
  // '...' stands for as many dims as the widest input gives it; narrower
  // ones align to its right.
  int64_t ellipsis_dims = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& term = eq.inputs[i];
    const int64_t letters =
        static_cast<int64_t>(term.size()) - (std::find(term.begin(), term.end(), kEllipsisToken) != term.end() ? 1 : 0);
    const bool has_ellipsis = letters != static_cast<int64_t>(term.size());
    const int64_t rank = static_cast<int64_t>(inputs[i]->rank());
    if (has_ellipsis ? rank < letters : rank != letters)
      return make_error("input {} has rank {} but its term in the equation has {} label{}{}", i, rank, letters,
                        letters == 1 ? "" : "s", has_ellipsis ? " and '...'" : "");
    if (has_ellipsis) ellipsis_dims = std::max(ellipsis_dims, rank - letters);
  }
  std::map<int, int64_t> sizes;
  std::vector<View<C>> views;
  std::map<int, int> occurrences;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    std::vector<int> labels;
    for (int tok : eq.inputs[i]) {
      if (tok != kEllipsisToken) {
        labels.push_back(tok);
        continue;
      }
      const int64_t e = static_cast<int64_t>(t.rank()) - static_cast<int64_t>(eq.inputs[i].size() - 1);
      for (int64_t j = 0; j < e; ++j) labels.push_back(kEllipsis + static_cast<int>(ellipsis_dims - e + j));
    }
    View<C> v;
    if constexpr (is_half_v<T>) {
      std::vector<float> data = to_float(t);
      v = owned(std::move(data), t.shape(), {});
    } else {
      v.data = t.data<T>();
      v.dims = t.shape();
      v.strides.assign(t.rank(), 0);
      int64_t stride = 1;
      for (size_t d = t.rank(); d-- > 0;) v.strides[d] = stride, stride *= t.dim(d);
    }
    // Unique labels; a repeated one reads the diagonal.
    View<C> unique;
    unique.owner = v.owner;
    unique.data = v.data;
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      ++occurrences[l];
      const int at = unique.find(l);
      if (at >= 0) {
        if (unique.dims[at] != v.dims[d])
          return make_error("label {} repeats in input {} over dims of different sizes ({} and {})", label_name(l), i,
                            unique.dims[at], v.dims[d]);
        unique.strides[at] += v.strides[d];
        continue;
      }
      auto known = sizes.find(l);
      if (known == sizes.end()) {
        sizes[l] = v.dims[d];
      } else if (known->second != v.dims[d]) {
        const bool stretch = l >= kEllipsis && (known->second == 1 || v.dims[d] == 1);
        if (!stretch)
          return make_error("label {} has size {} in input {} but {} elsewhere", label_name(l), v.dims[d], i, known->second);
        known->second = std::max(known->second, v.dims[d]);
      }
      unique.labels.push_back(l);
      unique.dims.push_back(v.dims[d]);
      unique.strides.push_back(v.strides[d]);
    }
    views.push_back(std::move(unique));
  }

  std::vector<int> output;
  if (eq.explicit_output) {
    for (int tok : eq.output) {
      if (tok != kEllipsisToken) output.push_back(tok);
      else
        for (int64_t j = 0; j < ellipsis_dims; ++j) output.push_back(kEllipsis + static_cast<int>(j));
    }
  } else {
    for (int64_t j = 0; j < ellipsis_dims; ++j) output.push_back(kEllipsis + static_cast<int>(j));
    for (const auto& [label, count] : occurrences)
      if (label < kEllipsis && count == 1) output.push_back(label);
  }

  // Left to right: each step keeps what the output or a later operand needs.
  View<C> acc = views[0];
  for (size_t i = 0; i <= views.size(); ++i) {
    std::set<int> needed(output.begin(), output.end());
    for (size_t j = i + 1; j < views.size(); ++j) needed.insert(views[j].labels.begin(), views[j].labels.end());
    if (i == 0) {
      std::set<int> gone;
      for (int l : acc.labels)
        if (!needed.count(l)) gone.insert(l);
      acc = sum_out(acc, gone);
      continue;
    }
    if (i == views.size()) break;
    ONNXKIT_ASSIGN(acc, contract(std::move(acc), views[i], needed));
  }
  // Every output label is an input's, and needed at every step.
  for (int l : output)
    if (acc.find(l) < 0) return make_error("internal error: label {} was summed away", label_name(l));
  if (!packed_in(acc, output)) acc = materialize(acc, output);

  Shape out_shape;
  for (int l : output) out_shape.push_back(acc.dims[acc.find(l)]);
  Tensor& out = ctx.output(0, data_type_of<T>(), out_shape);
  T* dst = out.mutable_data<T>();
  for (int64_t i = 0; i < out.numel(); ++i) dst[i] = static_cast<T>(acc.data[i]);
  return {};
}

Result<ComputeFn> build_einsum(const KernelInfo& info) {
  if (!info.has_attr("equation")) return make_error("attribute 'equation' is missing");
  ONNXKIT_ASSIGN(Equation eq, parse_equation(info.attr_string("equation", "")));
  if (eq.inputs.size() != info.num_inputs())
    return make_error("equation '{}' has {} operand term{}, but the node has {} input{}", info.attr_string("equation", ""),
                      eq.inputs.size(), eq.inputs.size() == 1 ? "" : "s", info.num_inputs(), info.num_inputs() == 1 ? "" : "s");
  return ComputeFn([eq](KernelContext& ctx) -> Status {
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
      if (!inputs.empty() && t->dtype() != inputs[0]->dtype())
        return make_error("input {} has element type {}, input 0 has {}", i, to_string(t->dtype()),
                          to_string(inputs[0]->dtype()));
      inputs.push_back(t);
    }
    if (inputs.empty()) return make_error("Einsum needs at least one input");
    return dispatch_numeric(inputs[0]->dtype(), [&]<class T>() -> Status { return run_einsum<T>(eq, inputs, ctx); });
  });
}

}  // namespace

void register_einsum(KernelRegistry& r) { r.add("", "Einsum", 12, kLatestOpset, make_kernel(build_einsum)); }

}  // namespace onnxkit::runtime::math
