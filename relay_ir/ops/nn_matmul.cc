// Matrix products: matmul (numpy semantics), gemm, matmul_integer, einsum. matmul's and gemm's
// packed_columns (0: the operand as it is) says the right operand comes packed by
// matmul_pack_weight, as AlterOpLayout rewrites products with a constant right operand.
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

const std::initializer_list<const char*> kMatmulTypes = {"float16", "float32", "float64", "int32", "int64", "uint32", "uint64"};

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
    fail("a packed right operand (packed_columns=", columns, ") must be ", want.str(), " and the left one of rank >= 2, got ",
         b.dtype.str(), " and rank ", a.ndim());
  return ops::matmul_unpacked_weight_shape(b.shape, columns, a.dtype, registers_of(attrs, "a packed matmul"));
}

Type matmul_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& a = nn::arg(args, 0, "left operand");
  const auto& b = nn::arg(args, 1, "right operand");
  nn::require_dtype(a, "the left operand", kMatmulTypes);
  return tensor_type(ops::matmul_shape(a.shape, right_operand(a, b, attrs)), a.dtype);
}

Type matmul_pack_weight_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& b = nn::arg(args, 0, "operand");
  nn::require_dtype(b, "the operand", kMatmulTypes);
  int64_t trans = attrs.get_int("trans");
  if (trans != 0 && trans != 1) fail("trans must be 0 or 1, got ", trans);
  return tensor_type(ops::matmul_packed_weight_shape(b.shape, trans, b.dtype, registers_of(attrs, "matmul_pack_weight")),
                     ops::packed_weight_dtype(b.dtype));
}

Type gemm_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& a = nn::arg(args, 0, "A");
  const auto& b_type = nn::arg(args, 1, "B");
  nn::require_dtype(a, "A", kMatmulTypes);
  std::vector<int64_t> b = right_operand(a, b_type, attrs);
  if (a.ndim() != 2 || b.size() != 2)
    fail("A and B must be 2-D, got ", runtime::shape_str(a.shape), " and ", runtime::shape_str(b));
  for (const char* flag : {"trans_a", "trans_b"})
    if (attrs.get_int(flag) != 0 && attrs.get_int(flag) != 1) fail(flag, " must be 0 or 1, got ", attrs.get_int(flag));
  bool ta = attrs.get_int("trans_a"), tb = attrs.get_int("trans_b");
  if (tb && attrs.get_int("packed_columns")) fail("a packed B is not transposed (trans_b must be 0; the packing transposed it)");
  int64_t m = a.shape[ta ? 1 : 0], k = a.shape[ta ? 0 : 1], kb = b[tb ? 1 : 0], n = b[tb ? 0 : 1];
  if (k != kb)
    fail("inner dimensions differ: A ", runtime::shape_str(a.shape), (ta ? " (transposed)" : ""), " and B ",
         runtime::shape_str(b), (tb ? " (transposed)" : ""), " give ", k, " vs ", kb);
  if (args.size() > 2) {
    const auto& c = nn::arg(args, 2, "C");
    if (c.dtype != a.dtype) fail("C dtype ", c.dtype.str(), " differs from A's ", a.dtype.str());
    if (c.ndim() > 2) fail("C must have rank <= 2, got ", runtime::shape_str(c.shape));
    std::vector<int64_t> want{m, n};
    for (size_t d = 0; d < c.ndim(); ++d) {
      int64_t w = want[2 - c.ndim() + d];
      if (c.shape[d] != 1 && c.shape[d] != w)
        fail("C of shape ", runtime::shape_str(c.shape), " does not broadcast to [", m, ", ", n, "]");
    }
  }
  return tensor_type({m, n}, a.dtype);
}

Type matmul_integer_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& a = nn::arg(args, 0, "A");
  const auto& b = nn::arg(args, 1, "B");
  nn::require_dtype(a, "A", {"int8", "uint8"});
  nn::require_dtype(b, "B", {"int8", "uint8"});
  std::vector<int64_t> out = ops::matmul_shape(a.shape, b.shape);
  int64_t m = a.ndim() > 1 ? a.shape[a.ndim() - 2] : 1, n = b.ndim() > 1 ? b.shape.back() : 1;
  const char* names[] = {"a_zero_point", "b_zero_point"};
  int64_t sizes[] = {m, n};
  for (int z = 0; z < 2; ++z) {
    const auto& zp = nn::arg(args, 2 + z, names[z]);
    if (zp.dtype != (z == 0 ? a : b).dtype) fail(names[z], " dtype ", zp.dtype.str(), " differs from its operand's");
    int64_t count = zp.numel();
    if (zp.ndim() > 1 || (count != 1 && count != sizes[z]))
      fail(names[z], " must be a scalar or have ", sizes[z], " elements, got shape ", runtime::shape_str(zp.shape));
  }
  return tensor_type(out, runtime::kInt32);
}

Type qlinear_matmul_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& a = nn::arg(args, 0, "a");
  const auto& b = nn::arg(args, 3, "b");
  nn::require_dtype(a, "a", {"int8", "uint8"});
  nn::require_dtype(b, "b", {"int8", "uint8"});
  std::vector<int64_t> out = ops::matmul_shape(a.shape, b.shape);
  int64_t m = a.ndim() > 1 ? a.shape[a.ndim() - 2] : 1, n = b.ndim() > 1 ? b.shape.back() : 1;
  nn::check_quant_param(args, 1, "a_scale", runtime::kFloat32, m);
  nn::check_quant_param(args, 2, "a_zero_point", a.dtype, m);
  nn::check_quant_param(args, 4, "b_scale", runtime::kFloat32, n);
  nn::check_quant_param(args, 5, "b_zero_point", b.dtype, n);
  nn::check_quant_param(args, 6, "y_scale", runtime::kFloat32, 0);
  const auto& yz = nn::arg(args, 7, "y_zero_point");
  nn::require_dtype(yz, "y_zero_point", {"int8", "uint8"});
  nn::check_quant_param(args, 7, "y_zero_point", yz.dtype, 0);
  return tensor_type(out, yz.dtype);
}

Type einsum_rel(const std::vector<Type>& args, const Attrs& attrs) {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& t = nn::arg(args, i, "operand " + std::to_string(i));
    if (t.dtype != nn::arg(args, 0, "operand 0").dtype) fail("operand dtypes differ: operand ", i, " is ", t.dtype.str());
    if (t.dtype.is_bool()) fail("operands must be numeric, got bool");
    shapes.push_back(t.shape);
  }
  return tensor_type(ops::einsum_shape(attrs.get_str("equation"), shapes), nn::arg(args, 0, "operand 0").dtype);
}

}  // namespace

std::vector<AttrSpec> nn::with_register_attrs(std::vector<AttrSpec> specs) {
  specs.push_back({"vector_bytes", int64_t(0)});
  specs.push_back({"vector_registers", int64_t(0)});
  return specs;
}

void register_nn_matmul_ops(OpRegistry& r) {
  r.add({"matmul", "numpy matmul: batch dimensions broadcast; a 1-D operand is a row (left) or column (right); the right one may "
         "come packed (packed_columns=N)", 2, 2, nn::with_register_attrs({{"packed_columns", int64_t(0)}}), matmul_rel,
         OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::matmul(in[0], in[1], registers_of(a, "matmul"), a.get_int("packed_columns"));
         })});
  r.add({"gemm", "alpha * op(A) @ op(B) + beta * C (C optional, broadcast; op transposes when trans_a / trans_b; B may come packed, "
         "packed_columns=N)", 2, 3,
         nn::with_register_attrs(
             {{"trans_a", int64_t(0)}, {"trans_b", int64_t(0)}, {"alpha", 1.0}, {"beta", 1.0}, {"packed_columns", int64_t(0)}}),
         gemm_rel,
         OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::gemm(in[0], in[1], nn::optional_input(in, 2), a.get_int("trans_a"), a.get_int("trans_b"),
                            a.get_float("alpha"), a.get_float("beta"), registers_of(a, "gemm"), a.get_int("packed_columns"));
         })});
  r.add({"matmul_pack_weight", "a right operand [.., K, N] (or [.., N, K] with trans=1) as the panels [.., N / nr, K, nr] (zeros past N) "
         "the matmul kernel reads", 1, 1, nn::with_register_attrs({{"trans", int64_t(0)}}), matmul_pack_weight_rel,
         OpPattern::Injective, single_output([](const In& in, const Attrs& a) {
           return ops::matmul_pack_weight(in[0], a.get_int("trans"), registers_of(a, "matmul_pack_weight"));
         })});
  r.add({"matmul_integer", "int32 matmul of (A - a_zero_point) and (B - b_zero_point) for int8/uint8 operands", 4, 4, {},
         matmul_integer_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::matmul_integer(in[0], in[1], in[2], in[3], registers_of(a, "matmul_integer"));
         })});
  r.add({"qlinear_matmul",
         "quantized matmul (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point): int32 sums requantized to "
         "y_zero_point's type, rounding half to even and saturating", 8, 8, {}, qlinear_matmul_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::qlinear_matmul(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], registers_of(a, "qlinear_matmul"));
         })});
  r.add({"einsum", "Einstein summation (equation like 'bij,bjk->bik'; '...' broadcasts; repeated letters take diagonals)", 1, -1,
         {{"equation", std::string(), true}}, einsum_rel, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) { return ops::einsum(a.get_str("equation"), in); })});
}

}  // namespace tessera::relay_ir
