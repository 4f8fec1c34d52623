// Matrix products: matmul (numpy semantics), gemm, matmul_integer, einsum, with the gradients of
// matmul, gemm and einsum. matmul's and gemm's packed_columns (0: the operand as it is) says the
// right operand comes packed by matmul_pack_weight, as AlterOpLayout rewrites products with a
// constant right operand.
// Gradients: each operand's cotangent of matmul or gemm is another product of the cotangent with
// the other operand (gemm's transposes chosen so no transpose is materialized); einsum's is an
// einsum of the cotangent with the other operands, then spread over what that misses: letters
// only the operand has, its diagonals, dimensions it broadcast along '...'.
#include <algorithm>
#include <map>
#include <set>

#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/printer.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

const std::initializer_list<const char*> kMatmulTypes = {"float16", "float32", "float64", "int32",
                                                         "int64",   "uint32",  "uint64"};

// The shape of the right operand `b` stands for: itself, or with packed_columns > 0 the
// [.., K, packed_columns] operand it is the packing of (checked).
std::vector<int64_t> right_operand(const TensorTypeNode& a, const TensorTypeNode& b, const Attrs& attrs) {
  int64_t columns = attrs.get_int("packed_columns");
  if (columns < 0) fail("packed_columns must not be negative, got ", columns);
  if (columns == 0) {
    if (a.dtype != b.dtype) fail("operand dtypes differ: ", a.dtype.str(), " vs ", b.dtype.str());
    return b.shape;
  }
  DataType want = ops::packed_weight_dtype(a.dtype);
  if (b.dtype != want || a.ndim() < 2)
    fail("a packed right operand (packed_columns=", columns, ") must be ", want.str(),
         " and the left one of rank >= 2, got ", b.dtype.str(), " and rank ", a.ndim());
  return ops::matmul_unpacked_weight_shape(b.shape, columns, a.dtype, registers_of(attrs, "a packed matmul"));
}

Type matmul_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& a = tensor_arg(args, 0, "left operand");
  const auto& b = tensor_arg(args, 1, "right operand");
  nn::require_dtype(a, "the left operand", kMatmulTypes);
  const bool trans_b = attrs.get_int("trans_b"), packed = attrs.get_int("packed_columns");
  if (trans_b && (b.ndim() < 2 || packed))
    fail("trans_b needs an unpacked right operand of rank >= 2, got rank ", b.ndim());
  if (a.shape.is_static() && b.shape.is_static() && !trans_b)
    return tensor_type(ops::matmul_shape(a.shape, right_operand(a, b, attrs)), a.dtype);
  std::vector<tensor_ir::Expr> right = packed ? Shape(right_operand(a, b, attrs)).dims() : b.shape.dims();
  if (trans_b) std::swap(right[right.size() - 1], right[right.size() - 2]);
  if (a.dtype != b.dtype && !packed) fail("operand dtypes differ: ", a.dtype.str(), " vs ", b.dtype.str());
  return tensor_type(Shape(ops::matmul_shape(a.shape.dims(), right)), a.dtype);
}

Type matmul_pack_weight_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& b = tensor_arg(args, 0, "operand");
  nn::require_dtype(b, "the operand", kMatmulTypes);
  int64_t trans = attrs.get_int("trans");
  if (trans != 0 && trans != 1) fail("trans must be 0 or 1, got ", trans);
  return tensor_type(
      ops::matmul_packed_weight_shape(b.shape, trans, b.dtype, registers_of(attrs, "matmul_pack_weight")),
      ops::packed_weight_dtype(b.dtype));
}

Type gemm_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& a = tensor_arg(args, 0, "A");
  const auto& b_type = tensor_arg(args, 1, "B");
  nn::require_dtype(a, "A", kMatmulTypes);
  std::vector<int64_t> b = right_operand(a, b_type, attrs);
  if (a.ndim() != 2 || b.size() != 2)
    fail("A and B must be 2-D, got ", runtime::shape_str(a.shape), " and ", runtime::shape_str(b));
  for (const char* flag : {"trans_a", "trans_b"})
    if (attrs.get_int(flag) != 0 && attrs.get_int(flag) != 1) fail(flag, " must be 0 or 1, got ", attrs.get_int(flag));
  bool ta = attrs.get_int("trans_a"), tb = attrs.get_int("trans_b");
  if (tb && attrs.get_int("packed_columns"))
    fail("a packed B is not transposed (trans_b must be 0; the packing transposed it)");
  // A's rows may be symbolic (a batch); B is a weight of static shape.
  tensor_ir::Expr m = a.shape.dim(ta ? 1 : 0);
  const int64_t kb = b[tb ? 1 : 0], n = b[tb ? 0 : 1];
  tensor_ir::require_constant_dim(a.shape.dim(ta ? 0 : 1), kb,
                                  "the depth of A " + a.shape.str() + " must be " + std::to_string(kb) + ", as B " +
                                      runtime::shape_str(b) + " says");
  const int64_t k = a.shape[ta ? 0 : 1];
  if (k != kb)
    fail("inner dimensions differ: A ", a.shape.str(), (ta ? " (transposed)" : ""), " and B ", runtime::shape_str(b),
         (tb ? " (transposed)" : ""), " give ", k, " vs ", kb);
  Shape out({m, tensor_ir::Expr(n)});
  if (args.size() > 2) {
    const auto& c = tensor_arg(args, 2, "C");
    if (c.dtype != a.dtype) fail("C dtype ", c.dtype.str(), " differs from A's ", a.dtype.str());
    if (c.ndim() > 2) fail("C must have rank <= 2, got ", c.shape.str());
    for (size_t d = 0; d < c.ndim(); ++d) {
      tensor_ir::Expr want = out.dim(2 - c.ndim() + d);
      if (!tensor_ir::is_const_int(c.shape.dim(d), 1) && !dims_equal(c.shape.dim(d), want))
        fail("C of shape ", c.shape.str(), " does not broadcast to ", out.str());
    }
  }
  return tensor_type(out, a.dtype);
}

Type matmul_integer_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& a = tensor_arg(args, 0, "A");
  const auto& b = tensor_arg(args, 1, "B");
  nn::require_dtype(a, "A", {"int8", "uint8"});
  nn::require_dtype(b, "B", {"int8", "uint8"});
  std::vector<int64_t> out = ops::matmul_shape(a.shape, b.shape);
  int64_t m = a.ndim() > 1 ? a.shape[a.ndim() - 2] : 1, n = b.ndim() > 1 ? b.shape.back() : 1;
  const char* names[] = {"a_zero_point", "b_zero_point"};
  int64_t sizes[] = {m, n};
  for (int z = 0; z < 2; ++z) {
    const auto& zp = tensor_arg(args, 2 + z, names[z]);
    if (zp.dtype != (z == 0 ? a : b).dtype) fail(names[z], " dtype ", zp.dtype.str(), " differs from its operand's");
    int64_t count = zp.numel();
    if (zp.ndim() > 1 || (count != 1 && count != sizes[z]))
      fail(names[z], " must be a scalar or have ", sizes[z], " elements, got shape ", runtime::shape_str(zp.shape));
  }
  return tensor_type(out, runtime::kInt32);
}

Type qlinear_matmul_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& a = tensor_arg(args, 0, "a");
  const auto& b = tensor_arg(args, 3, "b");
  nn::require_dtype(a, "a", {"int8", "uint8"});
  nn::require_dtype(b, "b", {"int8", "uint8"});
  std::vector<int64_t> out = ops::matmul_shape(a.shape, b.shape);
  int64_t m = a.ndim() > 1 ? a.shape[a.ndim() - 2] : 1, n = b.ndim() > 1 ? b.shape.back() : 1;
  nn::check_quant_param(args, 1, "a_scale", runtime::kFloat32, m);
  nn::check_quant_param(args, 2, "a_zero_point", a.dtype, m);
  nn::check_quant_param(args, 4, "b_scale", runtime::kFloat32, n);
  nn::check_quant_param(args, 5, "b_zero_point", b.dtype, n);
  nn::check_quant_param(args, 6, "y_scale", runtime::kFloat32, 0);
  const auto& yz = tensor_arg(args, 7, "y_zero_point");
  nn::require_dtype(yz, "y_zero_point", {"int8", "uint8"});
  nn::check_quant_param(args, 7, "y_zero_point", yz.dtype, 0);
  return tensor_type(out, yz.dtype);
}

Type einsum_rel(const std::vector<Type>& args, const Attrs& attrs) {
  std::vector<std::vector<tensor_ir::Expr>> shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& t = tensor_arg(args, i, "operand " + std::to_string(i));
    if (t.dtype != tensor_arg(args, 0, "operand 0").dtype)
      fail("operand dtypes differ: operand ", i, " is ", t.dtype.str());
    if (t.dtype.is_bool()) fail("operands must be numeric, got bool");
    shapes.push_back(t.shape.dims());
  }
  return tensor_type(Shape(ops::einsum_shape(attrs.get_str("equation"), shapes)),
                     tensor_arg(args, 0, "operand 0").dtype);
}

}  // namespace

std::vector<AttrSpec> nn::with_register_attrs(std::vector<AttrSpec> specs) {
  specs.push_back({"vector_bytes", int64_t(0)});
  specs.push_back({"vector_registers", int64_t(0)});
  return specs;
}

namespace nn {
namespace {

// x with its last two axes swapped.
Expr swap_last_two(const Expr& x) {
  size_t n = tensor_of(x).ndim();
  std::vector<int64_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[n - 1], perm[n - 2]);
  return call("transpose", {x}, {{"perm", perm}});
}

// C = A @ B: dA = dC @ B^T and dB = A^T @ dC, batch axes summed back where they broadcast. With
// trans_b (C = A @ B^T): dA = dC @ B and dB = dC^T @ A.
std::vector<Expr> matmul_gradient(const Expr& c, const Expr& g) {
  const auto* node = c.as<CallNode>();
  const Expr &a = node->args[0], &b = node->args[1];
  const bool trans_b = node->attrs.get_int("trans_b");
  // A 1-D A is a row and a 1-D B a column: work with their matrix forms.
  Expr a2 = tensor_of(a).ndim() == 1 ? reshape(a, {1, tensor_of(a).shape[0]}) : a;
  Expr b2 = tensor_of(b).ndim() == 1 ? reshape(b, {tensor_of(b).shape[0], 1}) : b;
  Expr g2 = reshape(g, tensor_of(call("matmul", {a2, b2}, {{"trans_b", int64_t(trans_b)}})).shape);
  Expr da = collapse_sum_to(call("matmul", {g2, trans_b ? b2 : swap_last_two(b2)}), a2->checked_type);
  Expr db = collapse_sum_to(trans_b ? call("matmul", {swap_last_two(g2), a2}) : call("matmul", {swap_last_two(a2), g2}),
                            b2->checked_type);
  return {reshape(da, tensor_of(a).shape), reshape(db, tensor_of(b).shape)};
}

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
    if (terms[t].find("...") != std::string::npos)
      broadcast = std::max(broadcast, shapes[t].size() - (terms[t].size() - 3));
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

// Y = alpha * op(A) @ op(B) + beta * C.
std::vector<Expr> gemm_gradient(const Expr& c, const Expr& g) {
  const auto& node = as_call(c);
  const Expr &a = node.args[0], &b = node.args[1];
  bool ta = node.attrs.get_int("trans_a"), tb = node.attrs.get_int("trans_b");
  double alpha = node.attrs.get_float("alpha"), beta = node.attrs.get_float("beta");
  Expr da = ta ? gemm(b, g, tb, true, alpha) : gemm(g, b, false, !tb, alpha);
  Expr db = tb ? gemm(g, a, true, ta, alpha) : gemm(a, g, !ta, false, alpha);
  std::vector<Expr> grads{da, db};
  if (node.args.size() > 2)
    grads.push_back(collapse_sum_to(beta == 1 ? g : mul(g, scalar_like(beta, g)), node.args[2]->checked_type));
  return grads;
}

std::vector<Expr> einsum_gradient(const Expr& c, const Expr& g) {
  std::vector<Expr> grads;
  for (size_t i = 0; i < as_call(c).args.size(); ++i) grads.push_back(einsum_operand_grad(c, g, i));
  return grads;
}

}  // namespace
}  // namespace nn

void register_nn_matmul_ops(OpRegistry& r) {
  r.add({"matmul",
         "numpy matmul: batch dimensions broadcast; a 1-D operand is a row (left) or column (right); the right one may "
         "come packed (packed_columns=N) or be read with its last two axes swapped (trans_b=1)",
         2, 2, nn::with_register_attrs({{"packed_columns", int64_t(0)}, {"trans_b", int64_t(0)}}), matmul_rel,
         OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::matmul(in[0], in[1], registers_of(a, "matmul"), a.get_int("packed_columns"),
                              a.get_int("trans_b"));
         }),
         "matmul", nn::matmul_gradient});
  r.add({"gemm",
         "alpha * op(A) @ op(B) + beta * C (C optional, broadcast; op transposes when trans_a / trans_b; B may come "
         "packed, "
         "packed_columns=N)",
         2, 3,
         nn::with_register_attrs({{"trans_a", int64_t(0)},
                                  {"trans_b", int64_t(0)},
                                  {"alpha", 1.0},
                                  {"beta", 1.0},
                                  {"packed_columns", int64_t(0)}}),
         gemm_rel, OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::gemm(in[0], in[1], nn::optional_input(in, 2), a.get_int("trans_a"), a.get_int("trans_b"),
                            a.get_float("alpha"), a.get_float("beta"), registers_of(a, "gemm"),
                            a.get_int("packed_columns"));
         }),
         "matmul", nn::gemm_gradient});
  r.add({"matmul_pack_weight",
         "a right operand [.., K, N] (or [.., N, K] with trans=1) as the panels [.., N / nr, K, nr] (zeros past N) "
         "the matmul kernel reads",
         1, 1, nn::with_register_attrs({{"trans", int64_t(0)}}), matmul_pack_weight_rel, OpPattern::Injective,
         single_output([](const In& in, const Attrs& a) {
           return ops::matmul_pack_weight(in[0], a.get_int("trans"), registers_of(a, "matmul_pack_weight"));
         }),
         "matmul_pack"});
  r.add({"matmul_integer",
         "int32 matmul of (A - a_zero_point) and (B - b_zero_point) for int8/uint8 operands",
         4,
         4,
         {},
         matmul_integer_rel,
         OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::matmul_integer(in[0], in[1], in[2], in[3], registers_of(a, "matmul_integer"));
         }),
         "matmul"});
  r.add({"qlinear_matmul",
         "quantized matmul (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point): int32 sums "
         "requantized to "
         "y_zero_point's type, rounding half to even and saturating",
         8,
         8,
         {},
         qlinear_matmul_rel,
         OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::qlinear_matmul(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7],
                                      registers_of(a, "qlinear_matmul"));
         }),
         "matmul_epilogue"});
  r.add({"einsum",
         "Einstein summation (equation like 'bij,bjk->bik'; '...' broadcasts; repeated letters take diagonals)",
         1,
         -1,
         {{"equation", std::string(), true}},
         einsum_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) { return ops::einsum(a.get_str("equation"), in); }),
         "reduce",
         nn::einsum_gradient});
}

}  // namespace tessera::relay_ir
