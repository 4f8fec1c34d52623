// Helpers shared by the nn family's compute definitions (not part of the public op library).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/index_util.h"
#include "tensor_ir/op.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops::nn_detail {

// The type sums are accumulated in: float16 accumulates in float32 (its arithmetic happens
// there anyway, and rounding every partial sum to 11 bits loses too much).
inline DataType accumulation_type(DataType t) { return t.is_float() && t.bits == 16 ? runtime::kFloat32 : t; }

// Reads `t` in type `type`.
inline Expr read_as(const Tensor& t, const std::vector<Expr>& idx, DataType type) { return cast(type, t(idx)); }

// The value of a scalar or per-index zero point (one element, or one per value of `i`).
inline Expr zero_point(const Tensor& zp, const Expr& i, DataType type) {
  if (!zp.defined()) return make_zero(type);
  std::vector<Expr> idx(zp.ndim(), Expr(0));
  int64_t n = 1;
  for (size_t d = 0; d < zp.ndim(); ++d) n *= zp->dim(d);
  if (n > 1) idx.back() = i;
  return cast(type, zp(idx));
}

// ONNX requantization of an int32 accumulator: saturate(round_half_even(acc * multiplier) +
// zero), computed in float32 as ONNX Runtime does, in `out` (int8 or uint8).
inline Expr requantize(const Expr& acc, const Expr& multiplier, const Expr& zero, DataType out) {
  Expr scaled = call(Intrinsic::round, {cast(runtime::kFloat32, acc) * multiplier}) + cast(runtime::kFloat32, zero);
  Expr lo = make_const(runtime::kFloat32, out.min_value()), hi = make_const(runtime::kFloat32, out.max_value());
  return cast(out, min(max(scaled, lo), hi));
}

// The shared core of matrix products (nn_matmul.cc): R[batch.., i, j] = sum_k a(i, k) * b(j, k).
// An operand element in the accumulation type: (batch indices of the result, row or column, k).
using MatmulAccess = std::function<Expr(const std::vector<Expr>& batch, const Expr& index, const Expr& k)>;
struct MatmulCore {
  std::vector<Expr> batch;  // of the result; symbolic sizes allowed, as for m
  Expr m = 1, n = 1, k = 1;         // symbolic sizes allowed (an attention's sequence length)
  bool has_i = true, has_j = true;  // whether the result keeps the row / column axis
  DataType acc;
  MatmulAccess a, b;  // a(batch, i, k), b(batch, j, k)
  // B's own batch dimensions: packing runs over these, not the broadcast ones.
  std::vector<Expr> b_batch;
  // B's batch indices for the result's batch indices.
  std::function<std::vector<Expr>(const std::vector<Expr>&)> b_batch_of;
  // B already packed into panels (matmul_pack_weight), or undefined; `b` is then not read.
  Tensor packed_b;
  Registers registers;  // the target's, which size the panels and tiles
  // `a` has rows up to m rounded up to whole tiles (an attention's exponentials, computed for the
  // padded rows of its scores), so the padded product reads them as they are instead of clamped.
  bool a_rows_padded = false;
  // The column count the panel width is chosen for; 0: n's size hint.
  int64_t n_hint = 0;
};
// With at least 4 rows and one vector of columns, or B packed ahead: B packed into panels (tag
// "matmul_pack"; "matmul_prepacked", a copy the template inlines, for packed_b), the
// product padded to whole tiles (tag "matmul") and an unpadding stage (tag "matmul_epilogue",
// which a caller's epilogue may read through); otherwise the plain product (tag "matmul").
Tensor matmul_core(const MatmulCore& c, const std::string& name);

// The reduction `kind` over `axes` of f(x's index with those axes running, the output's
// variables), keeping them as size-1 dimensions; a stage tagged `tag` (normalization and softmax
// statistics).
Tensor keepdims_reduce(const Tensor& x, const std::vector<int64_t>& axes, ReduceKind kind, const std::string& name,
                       const std::string& tag,
                       const std::function<Expr(const std::vector<Expr>&, const std::vector<Var>&)>& f);
// The index of a keepdims statistic for an element of x at `v`: `axes` pinned to 0.
std::vector<Expr> keepdims_index(const std::vector<Var>& v, const std::vector<int64_t>& axes);

// The sizes of [N, C, spatial...] data, N as 1 when it is symbolic (convolutions and pooling
// treat each image alike); the spatial sizes as they are (constants or expressions).
std::vector<Expr> dims_per_image(const Tensor& data);
// `shape`, computed from dims_per_image(data), with data's own batch (symbolic or not) first.
std::vector<Expr> with_batch_of(const Tensor& data, std::vector<Expr> shape);
// A shape's sizes as integers; throws naming the shape if one is symbolic.
std::vector<int64_t> const_dims(const std::vector<Expr>& shape);

// A name for an axis of rank-`rank` data: n, c, then spatial d0, d1, ...
std::vector<std::string> nc_axis_names(size_t rank);

}  // namespace tessera::tensor_ir::ops::nn_detail
