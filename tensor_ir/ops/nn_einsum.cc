// Einstein summation as one compute: the output indices are the letters kept, every other
// letter is a reduction axis, and each operand is read at its letters' indices (a letter twice
// in one operand reads its diagonal). "..." stands for the same broadcast dimensions in each
// operand and, unless the output omits it, leads the implicit output. Sizes may be symbolic: a
// letter's sizes must be provably equal (a variable against a constant takes the constant,
// tensor_ir/dimension_must_equal.h), and dimensions under "..." equal or 1.
#include <algorithm>
#include <map>

#include "runtime/error.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_util.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

// Labels: letters are themselves; the ellipsis' dimensions are '0', '1', ... (leftmost first).
struct Parsed {
  std::vector<std::string> inputs;  // labels of each operand, one per dimension
  std::string output;
  std::map<char, Expr> size;
};

bool is_letter(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

bool same(const Expr& a, const Expr& b) { return arith::equal_as_polynomials(a, b); }

Parsed parse(const std::string& equation, const std::vector<std::vector<Expr>>& shapes) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  auto bad = [&](const std::string& why) { fail("einsum '", equation, "': ", why); };
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t p = 0; p <= lhs.size(); ++p)
    if (p == lhs.size() || lhs[p] == ',') terms.push_back(lhs.substr(start, p - start)), start = p + 1;
  if (terms.size() != shapes.size())
    bad(std::to_string(terms.size()) + " operand terms for " + std::to_string(shapes.size()) + " operands");
  Parsed r;
  size_t ellipsis_rank = 0;
  std::vector<std::vector<Expr>> ellipsis_dims(terms.size());
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string& term = terms[t];
    size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos) letters.erase(dots, 3);
    for (char ch : letters)
      if (!is_letter(ch)) bad(std::string("unexpected character '") + ch + "' in term '" + term + "'");
    const auto& shape = shapes[t];
    if (dots == std::string::npos ? letters.size() != shape.size() : letters.size() > shape.size())
      bad("term '" + term + "' does not match operand " + std::to_string(t) + " of shape " + shape_str(shape));
    size_t er = shape.size() - letters.size();
    ellipsis_rank = std::max(ellipsis_rank, er);
    std::string labels;
    for (size_t p = 0, d = 0; p < term.size();) {
      if (term.compare(p, 3, "...") == 0) {
        for (size_t e = 0; e < er; ++e) ellipsis_dims[t].push_back(shape[d + e]);
        labels += std::string(er, '?');  // placeholder: ellipsis labels are fixed below
        d += er, p += 3;
        continue;
      }
      labels += term[p++], ++d;
    }
    r.inputs.push_back(labels);
  }
  // Ellipsis dimensions align at the right and broadcast.
  std::vector<Expr> ell(ellipsis_rank, Expr(1));
  for (size_t t = 0; t < terms.size(); ++t) {
    const auto& dims = ellipsis_dims[t];
    size_t off = ellipsis_rank - dims.size(), e = 0;
    for (char& ch : r.inputs[t])
      if (ch == '?') ch = static_cast<char>('0' + off + e), ++e;
    for (size_t i = 0; i < dims.size(); ++i) {
      Expr& cur = ell[off + i];
      if (is_const_int(dims[i], 1)) continue;
      if (!is_const_int(cur, 1) && !same(dims[i], cur)) bad("the dimensions under '...' do not provably broadcast");
      cur = dims[i];
    }
  }
  for (size_t e = 0; e < ellipsis_rank; ++e) r.size[static_cast<char>('0' + e)] = ell[e];
  for (size_t t = 0; t < terms.size(); ++t)
    for (size_t d = 0; d < r.inputs[t].size(); ++d) {
      char ch = r.inputs[t][d];
      if (!is_letter(ch)) continue;
      const Expr& n = shapes[t][d];
      auto it = r.size.find(ch);
      if (it == r.size.end()) {
        r.size[ch] = n;
        continue;
      }
      if (same(it->second, n)) continue;
      const std::string sizes =
          std::string("index '") + ch + "' has sizes " + to_string(it->second) + " and " + to_string(n);
      const std::string why = sizes + " in einsum '" + equation + "'";
      if (const int64_t* c = as_const_int(n)) require_constant_dim(it->second, *c, why);
      if (const int64_t* c = as_const_int(it->second)) require_constant_dim(n, *c, why);
      bad(sizes);
    }
  std::string ell_labels;
  for (size_t e = 0; e < ellipsis_rank; ++e) ell_labels += static_cast<char>('0' + e);
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis, then the letters used once, in alphabetical order.
    std::map<char, int> count;
    for (const auto& in : r.inputs)
      for (char ch : in) count[ch]++;
    r.output = ell_labels;
    std::vector<char> once;
    for (auto [ch, n] : count)
      if (is_letter(ch) && n == 1) once.push_back(ch);
    std::sort(once.begin(), once.end());
    r.output += std::string(once.begin(), once.end());
  } else {
    std::string rhs = eq.substr(arrow + 2);
    size_t dots = rhs.find("...");
    std::string letters = rhs;
    if (dots != std::string::npos) letters.erase(dots, 3);
    for (char ch : letters) {
      if (!is_letter(ch)) bad(std::string("unexpected character '") + ch + "' in the output");
      if (!r.size.count(ch)) bad(std::string("output index '") + ch + "' appears in no operand");
      if (std::count(letters.begin(), letters.end(), ch) > 1)
        bad(std::string("output index '") + ch + "' appears twice");
    }
    r.output = dots == std::string::npos ? rhs : rhs.substr(0, dots) + ell_labels + rhs.substr(dots + 3);
  }
  return r;
}

}  // namespace

std::vector<Expr> einsum_shape(const std::string& equation, const std::vector<std::vector<Expr>>& operands) {
  Parsed p = parse(equation, operands);
  std::vector<Expr> out;
  for (char ch : p.output) out.push_back(p.size.at(ch));
  return out;
}

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  if (operands.empty()) fail("einsum '", equation, "': no operands");
  std::vector<std::vector<Expr>> shapes;
  for (const auto& t : operands) {
    if (t.dtype() != operands[0].dtype())
      fail("einsum '", equation, "': operand dtypes differ: ", operands[0].dtype().str(), " vs ", t.dtype().str());
    shapes.push_back(t->shape);
  }
  Parsed p = parse(equation, shapes);
  DataType out_type = operands[0].dtype();
  DataType acc = accumulation_type(out_type);
  std::vector<Expr> shape;
  std::vector<std::string> names;
  for (char ch : p.output) {
    shape.push_back(p.size.at(ch));
    names.push_back(is_letter(ch) ? std::string(1, ch) : std::string("e") + ch);
  }
  std::map<char, IterVar> reduce;
  for (const auto& [ch, n] : p.size)
    if (p.output.find(ch) == std::string::npos)
      reduce[ch] = reduce_axis(Range(Expr(0), n), is_letter(ch) ? std::string("r") + ch : std::string("re") + ch);
  Tensor r = compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::map<char, Expr> index;
        for (size_t d = 0; d < p.output.size(); ++d) index[p.output[d]] = v[d];
        for (const auto& [ch, iv] : reduce) index[ch] = iv;
        Expr product;
        for (size_t t = 0; t < operands.size(); ++t) {
          std::vector<Expr> idx;
          for (size_t d = 0; d < p.inputs[t].size(); ++d)
            idx.push_back(is_const_int(shapes[t][d], 1) ? Expr(0) : index.at(p.inputs[t][d]));
          Expr x = read_as(operands[t], idx, acc);
          product = product.defined() ? product * x : x;
        }
        if (reduce.empty()) return product;
        std::vector<IterVar> axes;
        for (const auto& [ch, iv] : reduce) axes.push_back(iv);
        return sum(product, axes);
      },
      "einsum", "reduce", names);
  if (acc == out_type) return r;
  return compute(
      r->shape, [&](const std::vector<Var>& v) { return cast(out_type, r(as_exprs(v))); }, "einsum_cast", "elemwise",
      names);
}

}  // namespace tessera::tensor_ir::ops
