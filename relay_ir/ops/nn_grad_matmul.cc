// Gradients of gemm (each operand's cotangent is another gemm of the cotangent with the other
// operand, transposes chosen so no transpose is materialized) and einsum (each operand's is an
// einsum of the cotangent with the other operands, then spread over what that misses: letters
// only the operand has, its diagonals, dimensions it broadcast along '...').
#include <algorithm>
#include <map>
#include <set>

#include "relay_ir/ops/nn_grad.h"
#include "runtime/error.h"

namespace tessera::relay_ir::nn_grad {

namespace {

Expr gemm(const Expr& a, const Expr& b, bool trans_a, bool trans_b, double alpha) {
  return call("gemm", {a, b}, {{"trans_a", int64_t(trans_a)}, {"trans_b", int64_t(trans_b)}, {"alpha", alpha}});
}

// An einsum equation with '...' spelled out: labels are letters, or 256 + i for the i-th
// (leftmost first) broadcast dimension.
struct Equation {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::map<int, int64_t> size;  // broadcast dimensions: their broadcast size
};

bool is_letter(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

Equation parse(const std::string& equation, const std::vector<std::vector<int64_t>>& shapes) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0, p = 0; p <= lhs.size(); ++p)
    if (p == lhs.size() || lhs[p] == ',') terms.push_back(lhs.substr(start, p - start)), start = p + 1;
  Equation e;
  size_t broadcast = 0;
  for (size_t t = 0; t < terms.size(); ++t)
    if (terms[t].find("...") != std::string::npos) broadcast = std::max(broadcast, shapes[t].size() - (terms[t].size() - 3));
  auto expand = [&](const std::string& term, size_t dims) {
    std::vector<int> labels;
    for (size_t p = 0; p < term.size();) {
      if (term.compare(p, 3, "...") == 0) {
        for (size_t i = broadcast - dims; i < broadcast; ++i) labels.push_back(256 + static_cast<int>(i));
        p += 3;
      } else {
        labels.push_back(term[p++]);
      }
    }
    return labels;
  };
  for (size_t t = 0; t < terms.size(); ++t) {
    size_t dots = terms[t].find("...");
    size_t dims = dots == std::string::npos ? 0 : shapes[t].size() - (terms[t].size() - 3);
    e.inputs.push_back(expand(terms[t], dims));
    for (size_t d = 0; d < e.inputs[t].size(); ++d) {
      int64_t& s = e.size[e.inputs[t][d]];
      s = std::max(s, shapes[t][d]);
    }
  }
  if (arrow != std::string::npos) {
    e.output = expand(eq.substr(arrow + 2), broadcast);
  } else {  // implicit: the broadcast dimensions, then the letters used once, alphabetically
    for (size_t i = 0; i < broadcast; ++i) e.output.push_back(256 + static_cast<int>(i));
    std::map<int, int> count;
    for (const auto& in : e.inputs)
      for (int l : in) count[l]++;
    for (auto [l, n] : count)
      if (l < 256 && is_letter(static_cast<char>(l)) && n == 1) e.output.push_back(l);
  }
  return e;
}

// The cotangent of operand `i`.
Expr einsum_operand_grad(const Expr& c, const Expr& g, size_t i) {
  const auto& node = as_call(c);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& a : node.args) shapes.push_back(tensor_of(a).shape);
  Equation e = parse(node.attrs.get_str("equation"), shapes);
  DataType dtype = tensor_of(c).dtype;
  // Dimensions an operand broadcasts ('...' of size 1 against a larger one) are dropped: the
  // operand does not vary along them.
  auto kept = [&](size_t t) {
    std::vector<int> labels;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < e.inputs[t].size(); ++d) {
      int l = e.inputs[t][d];
      if (shapes[t][d] == 1 && e.size[l] != 1) continue;
      labels.push_back(l);
      shape.push_back(shapes[t][d]);
    }
    return std::make_pair(labels, shape);
  };
  std::map<int, char> letter;
  auto spell = [&](const std::vector<int>& labels) {
    std::string s;
    for (int l : labels) {
      if (!letter.count(l)) {
        if (letter.size() == 52) fail("einsum gradient: more than 52 distinct indices");
        size_t n = letter.size();
        letter[l] = static_cast<char>(n < 26 ? 'a' + n : 'A' + (n - 26));
      }
      s += letter[l];
    }
    return s;
  };
  std::vector<std::string> terms{spell(e.output)};
  std::vector<Expr> operands{g};
  std::set<int> available(e.output.begin(), e.output.end());
  for (size_t t = 0; t < node.args.size(); ++t) {
    if (t == i) continue;
    auto [labels, shape] = kept(t);
    terms.push_back(spell(labels));
    operands.push_back(reshape(node.args[t], shape));
    available.insert(labels.begin(), labels.end());
  }
  auto [own, own_shape] = kept(i);
  std::vector<int> unique;  // the operand's labels, first occurrences
  for (int l : own)
    if (std::find(unique.begin(), unique.end(), l) == unique.end()) unique.push_back(l);
  std::vector<int> found;
  for (int l : unique)
    if (available.count(l)) found.push_back(l);
  std::string eq;
  for (size_t t = 0; t < terms.size(); ++t) eq += (t ? "," : "") + terms[t];
  Expr grad = call("einsum", operands, {{"equation", eq + "->" + spell(found)}});
  if (found.size() != unique.size()) {  // labels no other value has: constant along them
    std::vector<int64_t> ones, full;
    for (int l : unique) {
      ones.push_back(available.count(l) ? e.size[l] : 1);
      full.push_back(e.size[l]);
    }
    grad = call("broadcast_to", {reshape(grad, ones)}, {{"shape", full}});
  }
  if (unique.size() != own.size()) {  // a repeated letter reads a diagonal: write it back onto one
    std::vector<Expr> parts{grad};
    std::string in = spell(unique), out;
    std::set<int> seen;
    for (int l : own) {
      if (!seen.insert(l).second) {
        int fresh = 512 + static_cast<int>(out.size());
        int64_t n = e.size[l];
        std::vector<double> eye(n * n, 0.0);
        for (int64_t k = 0; k < n; ++k) eye[k * n + k] = 1;
        parts.push_back(constant_of({n, n}, dtype, eye));
        in += "," + spell({l, fresh});
        out += spell({fresh});
      } else {
        out += spell({l});
      }
    }
    grad = call("einsum", parts, {{"equation", in + "->" + out}});
  }
  return reshape(grad, shapes[i]);
}

}  // namespace

void register_matmul(OpRegistry& r) {
  // Y = alpha * op(A) @ op(B) + beta * C.
  r.set_gradient("gemm", [](const Expr& c, const Expr& g) {
    const auto& node = as_call(c);
    const Expr &a = node.args[0], &b = node.args[1];
    bool ta = node.attrs.get_int("trans_a"), tb = node.attrs.get_int("trans_b");
    double alpha = node.attrs.get_float("alpha"), beta = node.attrs.get_float("beta");
    Expr da = ta ? gemm(b, g, tb, true, alpha) : gemm(g, b, false, !tb, alpha);
    Expr db = tb ? gemm(g, a, true, ta, alpha) : gemm(a, g, !ta, false, alpha);
    std::vector<Expr> grads{da, db};
    if (node.args.size() > 2) grads.push_back(collapse_sum_to(beta == 1 ? g : mul(g, scalar_like(beta, g)), node.args[2]->checked_type));
    return grads;
  });
  r.set_gradient("einsum", [](const Expr& c, const Expr& g) {
    std::vector<Expr> grads;
    for (size_t i = 0; i < as_call(c).args.size(); ++i) grads.push_back(einsum_operand_grad(c, g, i));
    return grads;
  });
}

}  // namespace tessera::relay_ir::nn_grad
