#include "tensor_ir/ops/math_reduce.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/index_util.h"
#include "tensor_ir/ops/math.h"

namespace tessera::tensor_ir::ops {

namespace ti = tessera::tensor_ir;

std::vector<int64_t> reduce_axes(const std::vector<int64_t>& axes, size_t ndim, const std::string& op) {
  std::vector<int64_t> out;
  auto n = static_cast<int64_t>(ndim);
  for (int64_t a : axes) {
    if (a < -n || a >= n) fail(op, ": axis ", a, " is out of range for a ", ndim, "-D tensor");
    out.push_back(a < 0 ? a + n : a);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) fail(op, ": an axis is repeated in the axes");
  return out;
}

namespace {

template <typename Dim>
std::vector<Dim> reduced_shape(const std::vector<Dim>& shape, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<Dim> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = axes.empty() || std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (!reduced) out.push_back(shape[d]);
    else if (keepdims) out.push_back(Dim(1));
  }
  return out;
}

}  // namespace

std::vector<int64_t> reduce_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes, bool keepdims) {
  return reduced_shape(shape, axes, keepdims);
}

std::vector<Expr> reduce_shape(const std::vector<Expr>& shape, const std::vector<int64_t>& axes, bool keepdims) {
  return reduced_shape(shape, axes, keepdims);
}

namespace {

// float16 accumulates in float32: a float16 running sum loses digits after a few thousand terms.
DataType accumulation_type(DataType t) { return t.is_float() && t.bits == 16 ? runtime::kFloat32 : t; }

// An elementwise stage after a reduction (mean's division, L2's square root): tagged "reduce" so
// the group gets the reduction template.
Tensor epilogue(const Tensor& r, const std::function<Expr(Expr)>& f, const std::string& name) {
  return compute(
      r->shape, [&](const std::vector<Var>& i) { return f(r(std::vector<Expr>(i.begin(), i.end()))); }, name, "reduce");
}

// combiner over `axes` of pre(x) in type `acc` (the output type), "reduce"-tagged. Reducing a
// 0-D tensor reduces nothing: the stage is then elementwise.
Tensor reduce_stage(const Tensor& x, ReduceKind kind, std::vector<int64_t> axes, bool keepdims, DataType acc,
                    const std::function<Expr(Expr)>& pre, const std::string& name) {
  axes = reduce_axes(axes, x.ndim(), name);
  if (axes.empty())
    for (size_t d = 0; d < x.ndim(); ++d) axes.push_back(static_cast<int64_t>(d));
  std::vector<Expr> shape = reduce_shape(x->shape, axes, keepdims);
  if (axes.empty())
    return epilogue(
        x, [&](Expr v) { return pre(ti::cast(acc, v)); }, name);
  std::vector<IterVar> raxis;
  for (int64_t a : axes) raxis.push_back(reduce_axis(Range(Expr(0), x->shape[a]), "r" + std::to_string(a)));
  return compute(
      shape,
      [&](const std::vector<Var>& out) {
        std::vector<Expr> idx;
        size_t o = 0, r = 0;
        for (size_t d = 0; d < x.ndim(); ++d) {
          if (r < axes.size() && axes[r] == static_cast<int64_t>(d)) {
            idx.push_back(raxis[r++]);
            if (keepdims) ++o;
          } else {
            idx.push_back(out[o++]);
          }
        }
        return Reduce::make(kind, pre(ti::cast(acc, x(idx))), raxis, Expr());
      },
      name, "reduce");
}

Expr identity(Expr v) { return v; }

void require_numeric(const Tensor& x, const std::string& op) {
  if (x.dtype().is_bool()) fail(op, ": ", x.name(), " must be numeric, got bool");
}

// A float reduction of x (ints compute in float64): post(combiner over axes of pre(x)), cast back.
Tensor float_reduction(const Tensor& x, ReduceKind kind, const std::vector<int64_t>& axes, bool keepdims,
                       const std::function<Expr(Expr)>& pre, const std::function<Expr(Expr)>& post,
                       const std::string& name) {
  require_numeric(x, name);
  DataType t = x.dtype();
  DataType acc = t.is_float() ? accumulation_type(t) : runtime::kFloat64;
  Tensor r = reduce_stage(x, kind, axes, keepdims, acc, pre, name);
  return epilogue(
      r, [&](Expr v) { return ti::cast(t, post(v)); }, name + "_out");
}

}  // namespace

Tensor reduce(const Tensor& x, ReduceKind kind, const std::vector<int64_t>& axes, bool keepdims,
              const std::string& name) {
  require_numeric(x, name);
  DataType t = x.dtype();
  DataType acc = accumulation_type(t);
  Tensor r = reduce_stage(x, kind, axes, keepdims, acc, identity, name);
  if (acc == t) return r;
  return epilogue(
      r, [&](Expr v) { return ti::cast(t, v); }, name + "_out");
}

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(x, ReduceKind::Sum, axes, keepdims, "reduce_sum");
}
Tensor reduce_prod(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(x, ReduceKind::Prod, axes, keepdims, "reduce_prod");
}
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(x, ReduceKind::Max, axes, keepdims, "reduce_max");
}
Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(x, ReduceKind::Min, axes, keepdims, "reduce_min");
}

Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  require_numeric(x, "reduce_mean");
  DataType t = x.dtype();
  DataType acc = accumulation_type(t);
  std::vector<int64_t> ax = reduce_axes(axes, x.ndim(), "reduce_mean");
  Expr count = 1;
  for (size_t d = 0; d < x.ndim(); ++d)
    if (ax.empty() || std::binary_search(ax.begin(), ax.end(), static_cast<int64_t>(d))) count = count * x->shape[d];
  count = arith::simplify(count);
  Tensor s = reduce_stage(x, ReduceKind::Sum, ax, keepdims, acc, identity, "reduce_mean");
  // An empty reduction divides 0 by 0: NaN for floats (numpy), 0 for integers.
  const int64_t* n = as_const_int(count);
  return epilogue(
      s,
      [&](Expr v) {
        return ti::cast(t, safe_div(v, n ? make_const(acc, static_cast<double>(*n)) : ti::cast(acc, count)));
      },
      "reduce_mean_out");
}

Tensor reduce_l1(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  require_numeric(x, "reduce_l1");
  DataType t = x.dtype();
  return epilogue(
      reduce_stage(
          x, ReduceKind::Sum, axes, keepdims, accumulation_type(t), [](Expr v) { return ti::abs(v); }, "reduce_l1"),
      [&](Expr v) { return ti::cast(t, v); }, "reduce_l1_out");
}

Tensor reduce_sum_square(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  require_numeric(x, "reduce_sum_square");
  DataType t = x.dtype();
  return epilogue(
      reduce_stage(
          x, ReduceKind::Sum, axes, keepdims, accumulation_type(t), [](Expr v) { return v * v; }, "reduce_sum_square"),
      [&](Expr v) { return ti::cast(t, v); }, "reduce_sum_square_out");
}

Tensor reduce_l2(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return float_reduction(
      x, ReduceKind::Sum, axes, keepdims, [](Expr v) { return v * v; }, [](Expr v) { return ti::sqrt(v); },
      "reduce_l2");
}

Tensor reduce_log_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return float_reduction(
      x, ReduceKind::Sum, axes, keepdims, identity, [](Expr v) { return ti::log(v); }, "reduce_log_sum");
}

Tensor reduce_log_sum_exp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  require_numeric(x, "reduce_log_sum_exp");
  DataType t = x.dtype();
  DataType acc = t.is_float() ? accumulation_type(t) : runtime::kFloat64;
  std::vector<int64_t> ax = reduce_axes(axes, x.ndim(), "reduce_log_sum_exp");
  // m + log(sum(exp(x - m))) with m the maximum: exp(x) alone overflows from x = 89 (float32).
  // An infinite m (all -inf, or a +inf) is replaced by 0, which gives the naive formula's result.
  Tensor m = reduce_stage(x, ReduceKind::Max, ax, true, acc, identity, "reduce_log_sum_exp_max");
  Tensor shift = map(
      m,
      [&](Expr v) {
        return let(v, [&](Expr u) { return select(ti::call(Intrinsic::isinf, {u}), make_zero(acc), u); });
      },
      "reduce_log_sum_exp_shift");
  std::vector<int64_t> full = ax;
  if (full.empty())
    for (size_t d = 0; d < x.ndim(); ++d) full.push_back(static_cast<int64_t>(d));
  Tensor centered = compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> mi;
        for (size_t d = 0; d < x.ndim(); ++d)
          mi.push_back(std::binary_search(full.begin(), full.end(), static_cast<int64_t>(d)) ? Expr(0) : Expr(i[d]));
        return ti::exp(ti::cast(acc, x(std::vector<Expr>(i.begin(), i.end()))) - shift(mi));
      },
      "reduce_log_sum_exp_centered", "elemwise");
  Tensor s = reduce_stage(centered, ReduceKind::Sum, ax, keepdims, acc, identity, "reduce_log_sum_exp");
  return compute(
      s->shape,
      [&](const std::vector<Var>& i) {
        // The kept-dimension index of m for an element of the result.
        std::vector<Expr> mi;
        size_t o = 0;
        for (size_t d = 0; d < x.ndim(); ++d) {
          bool reduced = std::binary_search(full.begin(), full.end(), static_cast<int64_t>(d));
          mi.push_back(reduced ? Expr(0) : Expr(i[o]));
          if (!reduced || keepdims) ++o;
        }
        return ti::cast(t, ti::log(s(std::vector<Expr>(i.begin(), i.end()))) + shift(mi));
      },
      "reduce_log_sum_exp_out", "reduce");
}

namespace {

Tensor arg_reduce(const Tensor& x, int64_t axis, bool keepdims, bool last, bool is_max, const std::string& name) {
  require_numeric(x, name);
  if (x.ndim() == 0) fail(name, ": the input must have at least one dimension");
  axis = reduce_axes({axis}, x.ndim(), name)[0];
  DataType acc = accumulation_type(x.dtype());
  // Two passes: the extreme value, then the first (last) index holding it.
  Tensor m = reduce_stage(x, is_max ? ReduceKind::Max : ReduceKind::Min, {axis}, true, acc, identity, name + "_value");
  const Expr n = x->shape[axis];
  IterVar k = reduce_axis(Range(Expr(0), n), "r");
  return compute(
      reduce_shape(x->shape, {axis}, keepdims),
      [&](const std::vector<Var>& out) {
        std::vector<Expr> xi, mi;
        size_t o = 0;
        for (size_t d = 0; d < x.ndim(); ++d) {
          if (static_cast<int64_t>(d) == axis) {
            xi.push_back(k);
            mi.push_back(Expr(0));
            if (keepdims) ++o;
          } else {
            xi.push_back(out[o]);
            mi.push_back(out[o++]);
          }
        }
        Expr hit = ti::cast(acc, x(xi)) == m(mi);
        Expr index = ti::cast(runtime::kInt64, Expr(k));
        if (last) return Reduce::make(ReduceKind::Max, select(hit, index, Expr(int64_t{-1})), {k}, Expr());
        return Reduce::make(ReduceKind::Min, select(hit, index, ti::cast(runtime::kInt64, n)), {k}, Expr());
      },
      name, "reduce");
}

}  // namespace

Tensor argmax(const Tensor& x, int64_t axis, bool keepdims, bool select_last_index) {
  return arg_reduce(x, axis, keepdims, select_last_index, true, "argmax");
}

Tensor argmin(const Tensor& x, int64_t axis, bool keepdims, bool select_last_index) {
  return arg_reduce(x, axis, keepdims, select_last_index, false, "argmin");
}

namespace {

// cond ? value : the identity of `kind` (0 for sums, 1 for products) as a reduction source: a
// select rather than a reduction condition, whose guard around the update would keep it from
// being vectorized. `value` must be safe to read where cond is false.
Expr masked(ReduceKind kind, Expr cond, Expr value) {
  return let(value, [&](Expr v) { return select(cond, v, reduce_identity(kind, v.type())); });
}

Expr combine(ReduceKind kind, Expr a, Expr b) { return kind == ReduceKind::Sum ? a + b : a * b; }

// The running sums (or products) of a short axis: each element a reduction over the axis,
// masked (O(n^2)).
Tensor scan_direct(const Tensor& x, int64_t axis, bool exclusive, bool reverse, DataType acc, ReduceKind kind,
                   const std::string& name) {
  IterVar k = reduce_axis(Range(Expr(0), x->shape[axis]), "r");
  return compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> xi(i.begin(), i.end());
        xi[axis] = k;
        Expr at = i[axis], kv = k;
        Expr in = reverse ? (exclusive ? kv > at : kv >= at) : (exclusive ? kv < at : kv <= at);
        return Reduce::make(kind, masked(kind, in, ti::cast(acc, x(xi))), {k}, Expr());
      },
      name, "reduce");
}

// The running sums (or products) of a long axis in blocks of b elements (positions counted in
// scan order, from the end when reversed): `local` scans within each block, `carry` combines the
// totals of the blocks before, and each result combines the two. About n b + (n / b)^2
// operations instead of n^2, both vectorized along the block or block index.
Tensor scan_blocked(const Tensor& x, int64_t axis, bool exclusive, bool reverse, DataType acc, int64_t b,
                    ReduceKind kind, const std::string& name) {
  const Expr n = x->shape[axis], last = arith::simplify(n - Expr(1));
  const Expr blocks = arith::simplify(floordiv(n + Expr(b - 1), Expr(b)));
  // Scan order -> index, clamped: the last block reaches past the end, where it reads nothing.
  auto position = [&](Expr q) { return reverse ? max(last - q, Expr(0)) : min(q, last); };
  auto with_axis = [&](const std::vector<Var>& v, size_t first, size_t count, std::vector<Expr> at) {
    std::vector<Expr> idx(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(first));
    idx.insert(idx.end(), at.begin(), at.end());
    idx.insert(idx.end(), v.begin() + static_cast<std::ptrdiff_t>(first + count), v.end());
    return idx;
  };
  std::vector<Expr> local_shape = x->shape;
  local_shape[axis] = Expr(b);
  local_shape.insert(local_shape.begin() + axis, blocks);
  IterVar t = reduce_axis(Range(Expr(0), Expr(b)), "t");
  Tensor local = compute(
      local_shape,
      [&](const std::vector<Var>& v) {
        Expr q = Expr(v[axis]) * Expr(b) + Expr(t);
        Expr in = logical_and(exclusive ? Expr(t) < Expr(v[axis + 1]) : Expr(t) <= Expr(v[axis + 1]), q < n);
        return Reduce::make(kind, masked(kind, in, ti::cast(acc, x(with_axis(v, axis, 2, {position(q)})))), {t},
                            Expr());
      },
      name + "_local", "reduce");
  std::vector<Expr> carry_shape = x->shape;
  carry_shape[axis] = blocks;
  IterVar c = reduce_axis(Range(Expr(0), blocks), "c");
  Tensor carry = compute(
      carry_shape,
      [&](const std::vector<Var>& v) {
        // Block c (< v's block, so full) totals its last local result, with its last element if exclusive.
        Expr total = local(with_axis(v, axis, 1, {Expr(c), Expr(b - 1)}));
        if (exclusive)
          total = combine(kind, total, ti::cast(acc, x(with_axis(v, axis, 1, {position(Expr(c) * Expr(b) + Expr(b - 1))}))));
        return Reduce::make(kind, masked(kind, Expr(c) < Expr(v[axis]), total), {c}, Expr());
      },
      name + "_carry", "reduce");
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        Expr q = reverse ? last - Expr(v[axis]) : Expr(v[axis]);
        Expr blk = floordiv(q, Expr(b)), within = floormod(q, Expr(b));
        return ti::cast(x.dtype(), combine(kind, local(with_axis(v, axis, 1, {blk, within})), carry(with_axis(v, axis, 1, {blk}))));
      },
      name, "reduce");
}

// The running sums or products of `x` along `axis`, accumulated in float32 for float16.
Tensor scan(const Tensor& x, int64_t axis, bool exclusive, bool reverse, ReduceKind kind, const std::string& name) {
  require_numeric(x, name.c_str());
  if (x.ndim() == 0) fail(name, ": the input must have at least one dimension");
  axis = reduce_axes({axis}, x.ndim(), name.c_str())[0];
  DataType t = x.dtype();
  DataType acc = accumulation_type(t);
  const int64_t* n = as_const_int(x->shape[axis]);
  if (!n || *n > 64) {
    // Blocks of about (2n)^(1/3), a multiple of 16, balance the two parts' work (16 up to n = 2048:
    // for an axis of symbolic length too).
    auto b = n ? static_cast<int64_t>(std::llround(std::cbrt(2.0 * static_cast<double>(*n)) / 16)) * 16 : 16;
    return scan_blocked(x, axis, exclusive, reverse, acc, std::max<int64_t>(b, 16), kind, name);
  }
  Tensor s = scan_direct(x, axis, exclusive, reverse, acc, kind, name);
  if (acc == t) return s;
  return epilogue(
      s, [&](Expr v) { return ti::cast(t, v); }, name + "_out");
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  return scan(x, axis, exclusive, reverse, ReduceKind::Sum, "cumsum");
}

Tensor cumprod(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  return scan(x, axis, exclusive, reverse, ReduceKind::Prod, "cumprod");
}

}  // namespace tessera::tensor_ir::ops
