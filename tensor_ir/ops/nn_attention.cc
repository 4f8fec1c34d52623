// Scaled dot-product attention, softmax(q @ k^T * scale + bias) @ v (or with the scores replaced
// where a bool mask says, as masked_fill writes it), as one compute: the scores are a
// packed product (nn_matmul.cc's core: keys packed into panels, tag "matmul"), the row maximum
// and the sum of exponentials statistics (tag "attention_stat"), the exponentials a stage of their
// own (tag "attention_exp"), the values' product another packed product, and the output (tag
// "attention") the product scaled by the sum's reciprocal, which costs a multiply per output
// element instead of one per score. The CPU template (schedule/templates/nn_attention.cc) computes
// all of it for a block of query rows at a time, so the scores stay in cache.
#include <cmath>

#include "runtime/error.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_util.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/size_hint.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

std::vector<Expr> with(std::vector<Expr> batch, const Expr& row, const Expr& column) {
  batch.push_back(row);
  batch.push_back(column);
  return batch;
}

}  // namespace

std::vector<Expr> attention_shape(const std::vector<Expr>& q, const std::vector<Expr>& k, const std::vector<Expr>& v,
                                  bool trans_k) {
  const size_t rank = q.size();
  if (rank < 2 || k.size() != rank || v.size() != rank)
    fail("attention: q, k and v must have one rank of at least 2, got ", shape_str(q), ", ", shape_str(k), ", ",
         shape_str(v));
  const Expr& keys = k[trans_k ? rank - 2 : rank - 1];
  const Expr& depth = k[trans_k ? rank - 1 : rank - 2];
  bool fits = arith::equal_as_polynomials(q[rank - 1], depth) && arith::equal_as_polynomials(v[rank - 2], keys);
  for (size_t d = 0; d + 2 < rank; ++d)
    fits = fits && arith::equal_as_polynomials(q[d], k[d]) && arith::equal_as_polynomials(q[d], v[d]);
  if (!fits)
    fail("attention: q ", shape_str(q), ", k ", shape_str(k), trans_k ? " (transposed)" : "", " and v ", shape_str(v),
         " do not fit: [.., L, D], [.., D, S] and [.., S, Dv] with equal batch dimensions");
  std::vector<Expr> out(q.begin(), q.end() - 1);
  out.push_back(v[rank - 1]);
  return out;
}

void check_attention_bias(const std::vector<Expr>& bias, const std::vector<Expr>& q, const std::vector<Expr>& k,
                          bool trans_k) {
  std::vector<Expr> scores(q.begin(), q.end() - 1);  // [.., L, S]
  scores.push_back(k[k.size() - (trans_k ? 2 : 1)]);
  bool fits = bias.size() <= scores.size();
  for (size_t d = 0; fits && d < bias.size(); ++d) {
    const Expr& target = scores[scores.size() - bias.size() + d];
    fits = is_const_int(bias[d], 1) || arith::equal_as_polynomials(bias[d], target);
  }
  if (!fits)
    fail("attention: the bias or mask ", shape_str(bias), " does not broadcast to the scores ", shape_str(scores));
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, const AttentionOptions& options,
                 const Registers& regs) {
  if (q.dtype() != runtime::kFloat32 || k.dtype() != q.dtype() || v.dtype() != q.dtype() ||
      (bias.defined() && bias.dtype() != q.dtype() && !bias.dtype().is_bool()))
    fail("attention: q, k and v must be float32 and the bias float32 or a bool mask, got ", q.dtype().str(), ", ",
         k.dtype().str(), ", ", v.dtype().str(), bias.defined() ? ", " + bias.dtype().str() : "");
  const double scale = options.scale;
  const bool trans_k = options.trans_k;
  const size_t rank = q.ndim();
  const Expr& keys = k->shape[trans_k ? rank - 2 : rank - 1];
  const Expr& queries = q->shape[rank - 2];
  if (bias.defined()) check_attention_bias(bias->shape, q->shape, k->shape, trans_k);
  const std::vector<int64_t> row{static_cast<int64_t>(rank - 1)};
  // The packed product's scores of whole tiles: the rows it pads (which read the last query row)
  // and the columns of its zero-filled key panels. Every stage after it spans them too, so the
  // tiles and vectors of each pass are whole; the padded columns are masked out of the maximum
  // and the exponentials, and the values' product reads zeros for them.
  const std::vector<Expr> batch(q->shape.begin(), q->shape.end() - 2);
  MatmulCore qk;
  qk.batch = qk.b_batch = batch;
  qk.b_batch_of = [](const std::vector<Expr>& b) { return b; };
  qk.m = q->shape[rank - 2], qk.n = keys, qk.k = q->shape[rank - 1];
  qk.acc = q.dtype();
  qk.a = [&](const std::vector<Expr>& b, const Expr& i, const Expr& d) { return q(with(b, i, d)); };
  qk.b = [&](const std::vector<Expr>& b, const Expr& j, const Expr& d) {
    return k(trans_k ? with(b, j, d) : with(b, d, j));
  };
  qk.registers = regs;
  // Panels of two vectors of keys at any symbolic length (a hint of a few keys would make them
  // one vector: half the accumulators, chains of dependent multiply-adds).
  if (!as_const_int(keys)) qk.n_hint = 4 * regs.lanes(q.dtype());
  Tensor scores = matmul_core(qk, "attention_scores");
  const bool padded = scores.as<ComputeOp>()->tag == "matmul_epilogue";
  if (padded) scores = input_tensors(scores)[0];
  const std::vector<Expr> shape = scores->shape;
  const Expr rows = shape[rank - 2], columns = shape[rank - 1];
  const bool padded_keys = !arith::equal_as_polynomials(columns, keys);
  // likely(): only the last vector of keys is partial, so loop partitioning gives the others a
  // body without the select.
  auto masked = [&](const Expr& j, const Expr& x, const Expr& otherwise) {
    return padded_keys ? select(call(Intrinsic::likely, {j < keys}), x, otherwise) : x;
  };
  // The bias at a score's index: broadcast, and clamped to its rows and keys for the padding's.
  auto bias_at = [&](const std::vector<Var>& i) {
    std::vector<Expr> idx;
    const size_t offset = rank - bias.ndim();
    for (size_t d = 0; d < bias.ndim(); ++d) {
      const size_t s = offset + d;
      idx.push_back(is_const_int(bias->shape[d], 1) ? Expr(0)
                    : s == rank - 2                 ? min(i[s], queries - Expr(1))
                    : s == rank - 1                 ? min(i[s], keys - Expr(1))
                                                    : Expr(i[s]));
    }
    return bias(idx);
  };
  Tensor scaled = compute(
      shape,
      [&](const std::vector<Var>& i) {
        Expr s = scores(as_exprs(i));
        if (scale != 1.0) s = s * make_const(q.dtype(), scale);
        if (!bias.defined()) return s;
        if (!bias.dtype().is_bool()) return s + bias_at(i);
        const Expr fill = make_const(q.dtype(), options.fill);
        return options.keep ? select(bias_at(i), s, fill) : select(bias_at(i), fill, s);
      },
      "attention_scaled", "elemwise");
  Tensor max = keepdims_reduce(scaled, row, ReduceKind::Max, "attention_max", "attention_stat",
                               [&](const std::vector<Expr>& idx, const std::vector<Var>&) {
                                 return masked(idx.back(), scaled(idx), make_const(q.dtype(), -INFINITY));
                               });
  Tensor e = compute(
      shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx = as_exprs(i);
        return masked(idx.back(), exp(scaled(idx) - max(keepdims_index(i, row))), make_zero(q.dtype()));
      },
      "attention_exp", "attention_exp");
  Tensor sum = keepdims_reduce(e, row, ReduceKind::Sum, "attention_sum", "attention_stat",
                               [&](const std::vector<Expr>& idx, const std::vector<Var>&) { return e(idx); });
  MatmulCore c;
  c.batch = c.b_batch = batch;
  c.b_batch_of = [](const std::vector<Expr>& b) { return b; };
  c.m = rows, c.n = v->shape[rank - 1], c.k = columns;
  c.acc = q.dtype();
  c.a = [&](const std::vector<Expr>& batch, const Expr& i, const Expr& j) { return e(with(batch, i, j)); };
  c.b = [&](const std::vector<Expr>& batch, const Expr& col, const Expr& j) {
    return masked(j, v(with(batch, j, col)), make_zero(q.dtype()));  // lazy: no read past the keys
  };
  c.registers = regs;
  c.a_rows_padded =
      padded && matmul_tile_rows(size_hint(rows), regs) == matmul_tile_rows(size_hint(q->shape[rank - 2]), regs);
  Tensor weighted = matmul_core(c, "attention_values");
  // No keys (a sequence of symbolic length 0): softmax's rows are empty and the product sums
  // nothing, 0, where the sum's reciprocal would make it NaN.
  const bool maybe_no_keys = !as_const_int(keys);
  return compute(
      attention_shape(q->shape, k->shape, v->shape, trans_k),
      [&](const std::vector<Var>& i) {
        Expr y = weighted(as_exprs(i)) * (make_const(q.dtype(), 1.0) / sum(keepdims_index(i, row)));
        return maybe_no_keys ? select(keys == Expr(0), make_zero(q.dtype()), y) : y;
      },
      "attention", "attention");
}

}  // namespace tessera::tensor_ir::ops
