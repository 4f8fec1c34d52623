// Matrix products. Every variant goes through one core: the right operand is repacked into
// column panels Bp[batch.., j / nr, k, j % nr] (zero-filled past N) so that a register tile of
// the result reads it contiguously, then R[batch.., i, j] = sum_k A(i, k) * Bp(k, j) (tag
// "matmul", the "matmul" CPU template's anchor). Casts, scaling and bias are an elementwise
// epilogue (tag "matmul_epilogue") that the template computes at the tile. A constant right
// operand may come packed ahead of time (matmul_pack_weight, by the graph's AlterOpLayout); the
// product then reads it through a copy stage (tag "matmul_prepacked") that the template
// inlines, which marks the panels for it.
#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_util.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/size_hint.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

int64_t Registers::lanes(DataType acc) const {
  if (vector_bytes <= 0 || count <= 0)
    fail("internal error: a product or convolution was defined without the target's vector registers");
  return std::max<int64_t>(1, vector_bytes / acc.element_bytes());
}

// With 32 registers: 8 rows, or 7 where that divides the rows and 8 does not (49, 196: no padded
// rows). With 16 (AVX2) a tile of 8 rows by two vectors needs 16 accumulators beside B's two
// vectors and A's broadcast, and spills: 6 or 5 rows (12 or 10 accumulators run alike), whichever
// pads fewer rows; 7 or 8 rows take two tiles of 4 (8 accumulators, enough to hide the FMAs'
// latency) rather than 10 or 12 rows (benchmarks/NOTES.md, "Matrix-product templates"). (A
// GPU's threads tile their own way; its packings keep the first rule.)
int64_t matmul_tile_rows(int64_t m, const Registers& regs) {
  if (regs.count >= 32 || regs.is_scalar_device()) return m % 8 != 0 && m % 7 == 0 ? 7 : std::clamp<int64_t>(m, 1, 8);
  if (m <= 6) return std::max<int64_t>(m, 1);
  if (m <= 8) return 4;
  auto padded = [m](int64_t mr) { return (m + mr - 1) / mr * mr; };
  return padded(5) < padded(6) ? 5 : 6;
}
// Two vectors, or one where n fits in one; three where that fills whole panels and two does not
// (144 columns: 3 panels of 48 instead of 5 of 32, the last half zeros), and the registers hold
// the accumulators of 3 vectors by 8 rows (not with 16). Between one and two
// vectors (MobileNet-v2's 24 channels), one panel of two (the second vector partly zeros) beats
// two panels of one: tiles of 8 x 2 vectors instead of 8 x 1 and a half-empty second panel
// (benchmarks/NOTES.md, "Matrix-product templates").
int64_t matmul_tile_cols(DataType acc, int64_t n, const Registers& regs) {
  int64_t lanes = regs.lanes(acc);
  if (regs.count >= 32 && n % (2 * lanes) != 0 && n % (3 * lanes) == 0) return 3 * lanes;
  return n > lanes ? 2 * lanes : lanes;
}

namespace {

std::vector<std::string> panel_axis_names(size_t batch) {
  std::vector<std::string> names;
  for (size_t d = 0; d < batch; ++d) names.push_back("b" + std::to_string(d));
  names.insert(names.end(), {"jo", "k", "ji"});
  return names;
}

// The column count the panels are chosen for.
int64_t column_hint(const MatmulCore& c) { return c.n_hint > 0 ? c.n_hint : size_hint(c.n); }

// B's panels Bp[b_batch.., j / nr, k, j % nr] (zeros past n), in the accumulation type.
Tensor pack_panels(const MatmulCore& c, const std::string& name) {
  int64_t nr = matmul_tile_cols(c.acc, column_hint(c), c.registers);
  Expr n = c.n;
  std::vector<Expr> shape = shape_exprs(c.b_batch);
  shape.insert(shape.end(), {ceil_div(c.n, nr), c.k, Expr(nr)});
  size_t nbb = c.b_batch.size();
  return compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> batch(v.begin(), v.begin() + nbb);
        Expr j = v[nbb] * Expr(nr) + v[nbb + 2];
        // The select is lazy (past n nothing is read): no clamp, which would make the loads gathers.
        return select(j < n, c.b(batch, j, v[nbb + 1]), make_zero(c.acc));
      },
      name + "_packed", "matmul_pack", panel_axis_names(nbb));
}

}  // namespace

namespace nn_detail {

Tensor matmul_core(const MatmulCore& c, const std::string& name) {
  int64_t lanes = c.registers.lanes(c.acc);
  // Pack when a panel is at least one vector wide and there are enough rows to reuse it (or
  // when B comes packed). The packed form also pads the result to whole tiles (rows read A
  // clamped, columns read the zero-filled panel) so a tile's loops have constant extents; the
  // epilogue drops the padding.
  // A symbolic row count is taken at its size hint for these choices; the padding past it is
  // computed at run time.
  const int64_t rows = size_hint(c.m), cols = column_hint(c);
  bool pack =
      c.packed_b.defined() || (c.has_i && c.has_j && cols >= lanes && rows >= 4 && !c.registers.is_scalar_device());
  if (!pack) {
    std::vector<Expr> shape = shape_exprs(c.batch);
    std::vector<std::string> names;
    for (size_t d = 0; d < c.batch.size(); ++d) names.push_back("b" + std::to_string(d));
    if (c.has_i) shape.push_back(c.m), names.push_back("i");
    if (c.has_j) shape.push_back(c.n), names.push_back("j");
    IterVar k = reduce_axis(Range(Expr(0), c.k), "k");
    size_t nb = c.batch.size();
    return compute(
        shape,
        [&](const std::vector<Var>& v) {
          std::vector<Expr> batch(v.begin(), v.begin() + nb);
          Expr i = c.has_i ? Expr(v[nb]) : Expr(0);
          Expr j = c.has_j ? Expr(v[nb + (c.has_i ? 1 : 0)]) : Expr(0);
          return sum(c.a(batch, i, k) * c.b(c.b_batch_of(batch), j, k), {k});
        },
        name, "matmul", names);
  }
  int64_t nr = matmul_tile_cols(c.acc, cols, c.registers), mr = matmul_tile_rows(rows, c.registers);
  Expr m = c.m;
  Tensor bp = c.packed_b.defined()
                  ? compute(
                        c.packed_b->shape, [&](const std::vector<Var>& v) { return c.packed_b(as_exprs(v)); },
                        name + "_prepacked", "matmul_prepacked", panel_axis_names(c.b_batch.size()))
                  : pack_panels(c, name);
  std::vector<Expr> shape = shape_exprs(c.batch);
  shape.push_back(round_up(m, mr));
  shape.push_back(round_up(c.n, nr));
  std::vector<std::string> names;
  for (size_t d = 0; d < c.batch.size(); ++d) names.push_back("b" + std::to_string(d));
  names.insert(names.end(), {"i", "j"});
  IterVar k = reduce_axis(Range(Expr(0), c.k), "k");
  size_t nb = c.batch.size();
  Tensor r = compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> batch(v.begin(), v.begin() + nb);
        std::vector<Expr> idx = c.b_batch_of(batch);
        idx.insert(idx.end(), {floordiv(v[nb + 1], Expr(nr)), k, floormod(v[nb + 1], Expr(nr))});
        // Padding rows read row m - 1: their results are dropped, and no select sits in the loop.
        return sum(c.a(batch, c.a_rows_padded ? Expr(v[nb]) : min(v[nb], m - Expr(1)), k) * bp(idx), {k});
      },
      name, "matmul", names);
  // The unpadded result, which callers' epilogues build on.
  std::vector<Expr> out_shape = shape_exprs(c.batch);
  out_shape.push_back(m);
  out_shape.push_back(c.n);
  return compute(
      out_shape, [&](const std::vector<Var>& v) { return r(as_exprs(v)); }, name + "_out", "matmul_epilogue", names);
}

}  // namespace nn_detail

namespace {

// An elementwise stage over the core's result (same axes and names); it reads the padded
// product directly rather than the core's own unpadding stage.
Tensor epilogue(const Tensor& r, const std::string& name, const std::function<Expr(const std::vector<Var>&, Expr)>& f) {
  const auto* op = r.as<ComputeOp>();
  Tensor src = op->tag == "matmul_epilogue" ? input_tensors(r)[0] : r;
  std::vector<std::string> names;
  for (const auto& iv : op->axis) names.push_back(iv.name());
  return compute(
      r->shape, [&](const std::vector<Var>& v) { return f(v, src(as_exprs(v))); }, name, "matmul_epilogue", names);
}

// Indices into `t`'s leading `nb` (batch) dimensions for result batch indices aligned at the right.
std::vector<Expr> broadcast_batch(const std::vector<Expr>& t_batch, const std::vector<Expr>& out_batch) {
  std::vector<Expr> idx;
  size_t offset = out_batch.size() - t_batch.size();
  for (size_t d = 0; d < t_batch.size(); ++d)
    idx.push_back(is_const_int(t_batch[d], 1) ? Expr(0) : out_batch[offset + d]);
  return idx;
}

// Whether two extents are provably equal.
bool same(const Expr& a, const Expr& b) { return arith::equal_as_polynomials(a, b); }

}  // namespace

std::vector<int64_t> matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.empty() || b.empty()) fail("matmul operands must have rank >= 1, got ranks ", a.size(), " and ", b.size());
  std::vector<int64_t> as = a.size() == 1 ? std::vector<int64_t>{1, a[0]} : a;
  std::vector<int64_t> bs = b.size() == 1 ? std::vector<int64_t>{b[0], 1} : b;
  int64_t ka = as.back(), kb = bs[bs.size() - 2];
  if (ka != kb)
    fail("matmul: inner dimensions differ: ", runtime::shape_str(a), " @ ", runtime::shape_str(b), " (", ka, " vs ", kb,
         ")");
  std::vector<int64_t> ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t nb = std::max(ba.size(), bb.size());
  std::vector<int64_t> out(nb);
  for (size_t i = 0; i < nb; ++i) {
    int64_t x = i < nb - ba.size() ? 1 : ba[i - (nb - ba.size())];
    int64_t y = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    if (x != y && x != 1 && y != 1)
      fail("matmul: batch dimensions of ", runtime::shape_str(a), " and ", runtime::shape_str(b), " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  if (a.size() > 1) out.push_back(as[as.size() - 2]);
  if (b.size() > 1) out.push_back(bs.back());
  return out;
}

std::vector<Expr> matmul_shape(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.empty() || b.empty()) fail("matmul operands must have rank >= 1, got ranks ", a.size(), " and ", b.size());
  std::vector<Expr> as = a.size() == 1 ? std::vector<Expr>{Expr(1), a[0]} : a;
  std::vector<Expr> bs = b.size() == 1 ? std::vector<Expr>{b[0], Expr(1)} : b;
  const Expr &ka = as.back(), &kb = bs[bs.size() - 2];
  if (!same(ka, kb)) {
    const std::string differ = "matmul: inner dimensions differ: " + shape_str(a) + " @ " + shape_str(b) + " (" +
                               to_string(ka) + " vs " + to_string(kb);
    for (const auto& [dim, other] : {std::pair{ka, kb}, std::pair{kb, ka}})
      if (const int64_t* value = as_const_int(other)) require_constant_dim(dim, *value, differ + ")");
    fail(differ, ", not provably equal)");
  }
  std::vector<Expr> ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t nb = std::max(ba.size(), bb.size());
  std::vector<Expr> out(nb);
  for (size_t i = 0; i < nb; ++i) {
    Expr x = i < nb - ba.size() ? Expr(1) : ba[i - (nb - ba.size())];
    Expr y = i < nb - bb.size() ? Expr(1) : bb[i - (nb - bb.size())];
    if (!same(x, y) && !is_const_int(x, 1) && !is_const_int(y, 1))
      fail("matmul: batch dimensions of ", shape_str(a), " and ", shape_str(b), " do not provably broadcast");
    out[i] = is_const_int(x, 1) ? y : x;
  }
  if (a.size() > 1) out.push_back(as[as.size() - 2]);
  if (b.size() > 1) out.push_back(bs.back());
  return out;
}

std::vector<int64_t> matmul_packed_weight_shape(const std::vector<int64_t>& b, bool trans, DataType dtype,
                                                const Registers& regs) {
  if (b.size() < 2) fail("matmul_pack_weight: the operand must have rank >= 2, got ", runtime::shape_str(b));
  int64_t k = b[b.size() - (trans ? 1 : 2)], n = b[b.size() - (trans ? 2 : 1)];
  int64_t nr = matmul_tile_cols(accumulation_type(dtype), n, regs);
  std::vector<int64_t> packed(b.begin(), b.end() - 2);
  packed.insert(packed.end(), {(n + nr - 1) / nr, k, nr});
  return packed;
}

std::vector<int64_t> matmul_unpacked_weight_shape(const std::vector<int64_t>& packed, int64_t columns, DataType dtype,
                                                  const Registers& regs) {
  std::vector<int64_t> b;
  if (packed.size() >= 3 && columns > 0) {
    b.assign(packed.begin(), packed.end() - 3);
    b.insert(b.end(), {packed[packed.size() - 2], columns});
  }
  if (b.empty() || matmul_packed_weight_shape(b, false, dtype, regs) != packed)
    fail("matmul: ", runtime::shape_str(packed), " is not the packing (matmul_pack_weight) of a ", dtype.str(),
         " operand with ", columns, " columns for ", regs.vector_bytes, "-byte vector registers");
  return b;
}

bool matmul_weight_packable(size_t a_rank, const std::vector<int64_t>& b, bool trans, DataType dtype,
                            const Registers& regs) {
  return a_rank >= 2 && b.size() >= 2 && b[b.size() - (trans ? 2 : 1)] >= regs.lanes(accumulation_type(dtype));
}

Tensor matmul_pack_weight(const Tensor& b, bool trans, const Registers& regs) {
  std::vector<int64_t> bs = b->dims();
  matmul_packed_weight_shape(bs, trans, b.dtype(), regs);  // checks the rank
  MatmulCore c;
  c.registers = regs;
  c.k = bs[bs.size() - (trans ? 1 : 2)];
  c.n = bs[bs.size() - (trans ? 2 : 1)];
  c.acc = accumulation_type(b.dtype());
  c.b_batch = shape_exprs(std::vector<int64_t>(bs.begin(), bs.end() - 2));
  DataType acc = c.acc;
  c.b = [&](const std::vector<Expr>& batch, const Expr& j, const Expr& k) {
    std::vector<Expr> idx = batch;
    idx.insert(idx.end(), {trans ? j : k, trans ? k : j});
    return read_as(b, idx, acc);
  };
  return pack_panels(c, "matmul");
}

namespace {

// An operand element in the accumulation type, from its full index and the row (A) or column (B)
// it belongs to (for per-row or per-column zero points).
using ReadOperand = std::function<Expr(const std::vector<Expr>& idx, const Expr& row_or_col)>;

// The core of ONNX MatMul semantics: batch dimensions broadcast like numpy's, a rank-1 A is a row
// and a rank-1 B a column (dropped from the result).
MatmulCore broadcast_matmul(const std::vector<Expr>& as, const std::vector<Expr>& bs, DataType acc, ReadOperand read_a,
                            ReadOperand read_b) {
  std::vector<Expr> out = matmul_shape(as, bs);
  MatmulCore c;
  c.has_i = as.size() > 1;
  c.has_j = bs.size() > 1;
  c.k = as.back();
  c.m = c.has_i ? as[as.size() - 2] : Expr(1);
  c.n = c.has_j ? bs.back() : Expr(1);
  c.batch.assign(out.begin(), out.end() - (c.has_i ? 1 : 0) - (c.has_j ? 1 : 0));
  c.acc = acc;
  std::vector<Expr> a_batch(as.begin(), as.end() - std::min<size_t>(as.size(), 2));
  c.b_batch.assign(bs.begin(), bs.end() - std::min<size_t>(bs.size(), 2));
  bool has_i = c.has_i, has_j = c.has_j;
  c.a = [=](const std::vector<Expr>& batch, const Expr& i, const Expr& k) {
    std::vector<Expr> idx = broadcast_batch(a_batch, batch);
    if (has_i) idx.push_back(i);
    idx.push_back(k);
    return read_a(idx, i);
  };
  c.b = [=](const std::vector<Expr>& bbatch, const Expr& j, const Expr& k) {
    std::vector<Expr> idx = bbatch;
    idx.push_back(k);
    if (has_j) idx.push_back(j);
    return read_b(idx, j);
  };
  std::vector<Expr> b_batch(bs.begin(), bs.end() - std::min<size_t>(bs.size(), 2));
  c.b_batch_of = [b_batch](const std::vector<Expr>& batch) { return broadcast_batch(b_batch, batch); };
  return c;
}

// A right operand without batch dimensions makes the left one's batch dimensions more rows:
// [b.., m, k] @ [k, n] is one product of b.. x m rows (whole register tiles), not b.. products
// of m rows each (a sequence-first [128, 1, 256] activation made 128 one-row products). The
// result stage (tag "matmul_epilogue") reads the product's row b.. x m + i for [b.., i, j].
Tensor matmul_folding_batch(const Tensor& a, const Tensor& b, const std::vector<Expr>& as, const Expr& n,
                            int64_t packed_columns, bool trans_b, const Registers& regs) {
  std::vector<Expr> lead(as.begin(), as.end() - 1);  // b.., m
  MatmulCore c;
  c.registers = regs;
  Expr rows = 1;
  for (const Expr& d : lead) rows = rows * d;
  c.m = arith::simplify(rows);
  c.n = n, c.k = as.back();
  c.acc = accumulation_type(a.dtype());
  DataType acc = c.acc;
  c.a = [a, lead, acc](const std::vector<Expr>&, const Expr& i, const Expr& k) {
    std::vector<Expr> idx = unflat_index(i, lead);
    idx.push_back(k);
    return read_as(a, idx, acc);
  };
  c.b = [b, acc, trans_b](const std::vector<Expr>&, const Expr& j, const Expr& k) {
    return read_as(b, trans_b ? std::vector<Expr>{j, k} : std::vector<Expr>{k, j}, acc);
  };
  c.b_batch_of = [](const std::vector<Expr>&) { return std::vector<Expr>{}; };
  if (packed_columns > 0) c.packed_b = b;
  Tensor r = matmul_core(c, "matmul");
  Tensor src = r.as<ComputeOp>()->tag == "matmul_epilogue" ? input_tensors(r)[0] : r;  // the padded product
  std::vector<Expr> out = lead;
  out.push_back(n);
  std::vector<std::string> names;
  for (size_t d = 0; d + 2 < out.size(); ++d) names.push_back("b" + std::to_string(d));
  names.insert(names.end(), {"i", "j"});
  DataType t = a.dtype();
  return compute(
      out,
      [&](const std::vector<Var>& v) {
        Expr y = src({flat_index(std::vector<Expr>(v.begin(), v.end() - 1), lead), v.back()});
        return acc == t ? y : cast(t, y);
      },
      "matmul_out", "matmul_epilogue", names);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, const Registers& regs, int64_t packed_columns, bool trans_b) {
  std::vector<Expr> as = a->shape, bs = b->shape;
  if (trans_b && (packed_columns > 0 || bs.size() < 2))
    fail("matmul: trans_b needs an unpacked right operand of rank >= 2, got ", shape_str(bs));
  if (trans_b) std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  if (packed_columns > 0) {
    bs = shape_exprs(matmul_unpacked_weight_shape(b->dims(), packed_columns, a.dtype(), regs));
    if (b.dtype() != accumulation_type(a.dtype()) || as.size() < 2)
      fail("matmul: a packed right operand must be ", accumulation_type(a.dtype()).str(),
           " and the left one of rank >= 2, got ", b.dtype().str(), " and ", shape_str(as));
  } else if (a.dtype() != b.dtype()) {
    fail("matmul: operand dtypes differ: ", a.dtype().str(), " vs ", b.dtype().str());
  }
  // A symbolic extent may be 0 at run time; the folded form handles that as the plain one does.
  bool empty = std::any_of(as.begin(), as.end(), [](const Expr& d) { return is_zero(d); });
  if (as.size() >= 3 && bs.size() == 2 && !empty)
    return matmul_folding_batch(a, b, as, bs.back(), packed_columns, trans_b, regs);
  DataType acc = accumulation_type(a.dtype());
  MatmulCore c = broadcast_matmul(
      as, bs, acc, [a, acc](const std::vector<Expr>& idx, const Expr&) { return read_as(a, idx, acc); },
      [b, acc, trans_b](std::vector<Expr> idx, const Expr&) {
        if (trans_b) std::swap(idx[idx.size() - 1], idx[idx.size() - 2]);
        return read_as(b, idx, acc);
      });
  c.registers = regs;
  if (packed_columns > 0) c.packed_b = b;
  Tensor r = matmul_core(c, "matmul");
  if (acc == a.dtype()) return r;
  DataType t = a.dtype();
  return epilogue(r, "matmul_cast", [t](const std::vector<Var>&, Expr v) { return cast(t, v); });
}

Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& bias, bool trans_a, bool trans_b, double alpha, double beta,
            const Registers& regs, int64_t packed_columns) {
  std::vector<int64_t> bs = b->dims();
  if (packed_columns > 0) {
    bs = matmul_unpacked_weight_shape(bs, packed_columns, a.dtype(), regs);
    if (b.dtype() != accumulation_type(a.dtype()) || trans_b)
      fail("gemm: a packed B must be ", accumulation_type(a.dtype()).str(),
           " and not transposed (the packing did that)");
  } else if (a.dtype() != b.dtype()) {
    fail("gemm: operand dtypes differ: ", a.dtype().str(), " vs ", b.dtype().str());
  }
  if (a.ndim() != 2 || bs.size() != 2) fail("gemm: operands must be 2-D, got ranks ", a.ndim(), " and ", bs.size());
  MatmulCore c;
  c.registers = regs;
  c.m = a->shape[trans_a ? 1 : 0];  // may be symbolic (a batch of rows)
  c.k = a->dim(trans_a ? 0 : 1);
  c.n = bs[trans_b ? 0 : 1];
  int64_t kb = bs[trans_b ? 1 : 0];
  if (!is_const_int(c.k, kb)) fail("gemm: inner dimensions differ (", to_string(c.k), " vs ", kb, ")");
  c.acc = accumulation_type(a.dtype());
  DataType acc = c.acc;
  c.a = [&](const std::vector<Expr>&, const Expr& i, const Expr& k) {
    return read_as(a, trans_a ? std::vector<Expr>{k, i} : std::vector<Expr>{i, k}, acc);
  };
  c.b = [&](const std::vector<Expr>&, const Expr& j, const Expr& k) {
    return read_as(b, trans_b ? std::vector<Expr>{j, k} : std::vector<Expr>{k, j}, acc);
  };
  if (packed_columns > 0) c.packed_b = b;
  c.b_batch_of = [](const std::vector<Expr>&) { return std::vector<Expr>{}; };
  Tensor r = matmul_core(c, "gemm");
  bool use_bias = bias.defined() && beta != 0;
  if (use_bias) {
    std::vector<int64_t> bshape = bias->dims();
    if (bshape.size() > 2) fail("gemm: C must have rank <= 2, got ", runtime::shape_str(bshape));
    for (size_t d = 0; d < bshape.size(); ++d) {
      Expr want = d + bshape.size() == 2 ? c.m : c.n;
      if (bshape[d] != 1 && !is_const_int(want, bshape[d]))
        fail("gemm: C of shape ", runtime::shape_str(bshape), " does not broadcast to [", to_string(c.m), ", ",
             to_string(c.n), "]");
    }
  }
  if (alpha == 1 && !use_bias && acc == a.dtype()) return r;
  DataType t = a.dtype();
  return epilogue(r, "gemm_out", [&](const std::vector<Var>& v, Expr x) {
    Expr y = alpha == 1 ? x : x * make_const(acc, alpha);
    if (use_bias) {
      std::vector<Expr> idx;
      size_t off = 2 - bias.ndim();
      for (size_t d = 0; d < bias.ndim(); ++d) idx.push_back(bias->dim(d) == 1 ? Expr(0) : Expr(v[off + d]));
      Expr cv = read_as(bias, idx, acc);
      y = y + (beta == 1 ? cv : cv * make_const(acc, beta));
    }
    return cast(t, y);
  });
}

Tensor matmul_integer(const Tensor& a, const Tensor& b, const Tensor& a_zero, const Tensor& b_zero,
                      const Registers& regs) {
  if (a.ndim() < 1 || b.ndim() < 1) fail("matmul_integer: operands must have rank >= 1");
  std::vector<Expr> as = shape_exprs(a->dims()), bs = shape_exprs(b->dims());
  DataType acc = runtime::kInt32;
  MatmulCore c = broadcast_matmul(
      as, bs, acc,
      [a, a_zero, acc](const std::vector<Expr>& idx, const Expr& i) {
        return read_as(a, idx, acc) - zero_point(a_zero, i, acc);
      },
      [b, b_zero, acc](const std::vector<Expr>& idx, const Expr& j) {
        return read_as(b, idx, acc) - zero_point(b_zero, j, acc);
      });
  c.registers = regs;
  return matmul_core(c, "matmul_integer");
}

Tensor qlinear_matmul(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero, const Tensor& b,
                      const Tensor& b_scale, const Tensor& b_zero, const Tensor& y_scale, const Tensor& y_zero,
                      const Registers& regs) {
  Tensor acc = matmul_integer(a, b, a_zero, b_zero, regs);
  bool has_i = a.ndim() > 1, has_j = b.ndim() > 1;
  DataType out = y_zero.dtype();
  return epilogue(acc, "qlinear_matmul", [&](const std::vector<Var>& v, Expr x) {
    Expr i = has_i ? Expr(v[v.size() - (has_j ? 2 : 1)]) : Expr(0);
    Expr j = has_j ? Expr(v.back()) : Expr(0);
    Expr multiplier = zero_point(a_scale, i, runtime::kFloat32) * zero_point(b_scale, j, runtime::kFloat32) /
                      zero_point(y_scale, Expr(0), runtime::kFloat32);
    return requantize(x, multiplier, zero_point(y_zero, Expr(0), runtime::kInt32), out);
  });
}

}  // namespace tessera::tensor_ir::ops
