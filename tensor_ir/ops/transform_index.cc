#include "tensor_ir/ops/transform_index.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/index_util.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir::ops {

namespace {

void check_indices(const char* op, const Tensor& indices) {
  if (!indices.dtype().is_integer()) fail(op, ": indices must be integers, got ", indices.dtype().str());
}

Tensor copy_of(const Tensor& data, const char* name) {
  return compute(
      data->shape, [&](const std::vector<Var>& o) { return data(as_exprs(o)); }, name, "transform");
}

// `value` where `condition` holds, else the identity of the reduction: a select rather than a
// reduction condition, so that the reduction vectorizes.
Expr masked(ReduceKind kind, const Expr& condition, const Expr& value) {
  return select(condition, value, reduce_identity(kind, value.type()));
}

// How a scatter's updates aimed at one element combine before meeting the data.
ReduceKind reduce_kind(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::Add:
      return ReduceKind::Sum;
    case ScatterReduction::Mul:
      return ReduceKind::Prod;
    case ScatterReduction::Max:
      return ReduceKind::Max;
    default:
      return ReduceKind::Min;
  }
}

Expr all_of(const std::vector<Expr>& conditions) {
  Expr c;
  for (const auto& x : conditions) c = c ? logical_and(c, x) : x;
  return c ? c : const_true();
}

// Combines data with the reduced updates aimed at each element (add/mul), or with the one
// update chosen by `source` (replace).
Tensor combine(const Tensor& data, const Tensor& reduced, ScatterReduction r, const char* name) {
  return compute(
      data->shape,
      [&](const std::vector<Var>& o) {
        Expr d = data(as_exprs(o)), u = reduced(as_exprs(o));
        switch (r) {
          case ScatterReduction::Add:
            return d + u;
          case ScatterReduction::Mul:
            return d * u;
          case ScatterReduction::Max:
            return max(d, u);
          default:
            return min(d, u);
        }
      },
      name, "scatter");
}

}  // namespace

Expr wrap_and_clamp_index(const Expr& index, const Expr& n) {
  Expr i = cast(kIndexType, index);
  Expr wrapped = select(i < Expr(0), i + n, i);
  const int64_t* constant = as_const_int(n);
  return min(max(wrapped, Expr(0)), constant ? Expr(*constant - 1) : n - Expr(1));
}

Expr wrap_and_clamp_index(const Expr& index, int64_t n) { return wrap_and_clamp_index(index, Expr(n)); }

namespace {

bool is_static(const Tensor& t) {
  return std::all_of(t->shape.begin(), t->shape.end(), [](const Expr& d) { return as_const_int(d) != nullptr; });
}

// take where data or indices have symbolic dimensions. A gathered axis of symbolic size must not
// be empty at run time (a graph checks it: relay_ir's take_nonempty); indices are clamped to it.
Tensor take_of_symbolic_shapes(const Tensor& data, const Tensor& indices, int64_t axis) {
  const std::vector<Expr>& ds = data->shape;
  const int64_t a = normalize_axis(axis, static_cast<int64_t>(ds.size()), "take: axis");
  const int64_t* n = as_const_int(ds[a]);
  std::vector<Expr> out(ds.begin(), ds.begin() + a);
  out.insert(out.end(), indices->shape.begin(), indices->shape.end());
  out.insert(out.end(), ds.begin() + a + 1, ds.end());
  const size_t ni = indices.ndim();
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        if (n && *n == 0) return make_zero(data.dtype());  // then out is empty too, or the indices are all invalid
        std::vector<Expr> idx(o.begin(), o.begin() + a);
        Expr at = indices(std::vector<Expr>(o.begin() + a, o.begin() + a + ni));
        idx.push_back(wrap_and_clamp_index(at, ds[a]));
        idx.insert(idx.end(), o.begin() + a + ni, o.end());
        return data(idx);
      },
      "take", "transform");
}

}  // namespace

Tensor take(const Tensor& data, const Tensor& indices, int64_t axis) {
  check_indices("take", indices);
  if (!is_static(data) || !is_static(indices)) return take_of_symbolic_shapes(data, indices, axis);
  Shape ds = data->dims();
  Shape out = take_shape(ds, indices->dims(), axis);
  int64_t a = normalize_axis(axis, static_cast<int64_t>(ds.size()));
  size_t ni = indices.ndim();
  return compute(
      shape_exprs(out),
      [&](const std::vector<Var>& o) {
        if (numel(out) == 0) return make_zero(data.dtype());
        std::vector<Expr> idx(o.begin(), o.begin() + a);
        idx.push_back(wrap_and_clamp_index(indices(std::vector<Expr>(o.begin() + a, o.begin() + a + ni)), ds[a]));
        idx.insert(idx.end(), o.begin() + a + ni, o.end());
        return data(idx);
      },
      "take", "transform");
}

Tensor gather_elements(const Tensor& data, const Tensor& indices, int64_t axis) {
  check_indices("gather_elements", indices);
  const std::vector<Expr>& ds = data->shape;
  const std::vector<Expr> out = gather_elements_dims(ds, indices->shape, axis);
  const int64_t a = normalize_axis(axis, static_cast<int64_t>(ds.size()));
  const bool empty = std::any_of(out.begin(), out.end(), [](const Expr& d) { return is_const_int(d, 0); });
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        if (empty) return make_zero(data.dtype());
        std::vector<Expr> idx = as_exprs(o);
        idx[a] = wrap_and_clamp_index(indices(as_exprs(o)), ds[a]);
        return data(idx);
      },
      "gather_elements", "transform");
}

// Data and indices may have symbolic dimensions (the index tuples' length, indices' last, is a
// constant): an indexed dimension of symbolic size must then not be empty where a tuple reads it
// (relay_ir's gather_nd_nonempty); indices are clamped to it.
Tensor gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  check_indices("gather_nd", indices);
  const std::vector<Expr>& ds = data->shape;
  const std::vector<Expr>& is = indices->shape;
  const std::vector<Expr> out = gather_nd_dims(ds, is, batch_dims);
  const bool empty = std::any_of(out.begin(), out.end(), [](const Expr& d) { return is_const_int(d, 0); });
  const size_t rows = is.size() - 1, depth = static_cast<size_t>(*as_const_int(is.back()));
  const size_t b = static_cast<size_t>(batch_dims);
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        if (empty) return make_zero(data.dtype());
        std::vector<Expr> idx(o.begin(), o.begin() + b);
        std::vector<Expr> at(o.begin(), o.begin() + rows);
        at.push_back(Expr(0));
        for (size_t j = 0; j < depth; ++j) {
          at.back() = Expr(static_cast<int64_t>(j));
          idx.push_back(wrap_and_clamp_index(indices(at), ds[b + j]));
        }
        idx.insert(idx.end(), o.begin() + rows, o.end());
        return data(idx);
      },
      "gather_nd", "transform");
}

ScatterReduction parse_scatter_reduction(const std::string& name) {
  if (name == "none") return ScatterReduction::None;
  if (name == "add") return ScatterReduction::Add;
  if (name == "mul") return ScatterReduction::Mul;
  if (name == "max") return ScatterReduction::Max;
  if (name == "min") return ScatterReduction::Min;
  fail("scatter: reduction '", name, "' is not one of none, add, mul, max, min");
}

namespace {

void check_scatter_types(const char* op, const Tensor& data, const Tensor& indices, const Tensor& updates,
                         ScatterReduction r) {
  check_indices(op, indices);
  if (updates.dtype() != data.dtype())
    fail(op, ": updates are ", updates.dtype().str(), ", data is ", data.dtype().str());
  if (r != ScatterReduction::None && data.dtype().is_bool()) fail(op, ": reductions of bool tensors");
}

}  // namespace

Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis,
                        ScatterReduction r) {
  check_scatter_types("scatter_elements", data, indices, updates, r);
  Shape ds = data->dims(), is = indices->dims();
  check_scatter_elements(ds, is, updates->dims(), axis);
  if (numel(is) == 0) return copy_of(data, "scatter_elements");
  size_t a = static_cast<size_t>(normalize_axis(axis, static_cast<int64_t>(ds.size())));
  // Coordinates in indices/updates of output element o with `along` on the axis; clamped where
  // updates are smaller than data so that reads stay in bounds (`match` excludes those points).
  auto at = [&](const std::vector<Var>& o, const Expr& along) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < ds.size(); ++d)
      idx.push_back(d == a ? along : is[d] == ds[d] ? Expr(o[d]) : min(Expr(o[d]), Expr(is[d] - 1)));
    return idx;
  };
  auto match = [&](const std::vector<Var>& o, const Expr& k) {
    std::vector<Expr> c{wrap_and_clamp_index(indices(at(o, k)), ds[a]) == o[a]};
    for (size_t d = 0; d < ds.size(); ++d)
      if (d != a && is[d] < ds[d]) c.push_back(o[d] < Expr(is[d]));
    return all_of(c);
  };
  if (r == ScatterReduction::None) {
    Tensor source = compute(
        shape_exprs(ds),
        [&](const std::vector<Var>& o) {
          IterVar k = reduce_axis(Range(Expr(0), Expr(is[a])), "k");
          return max_reduce(masked(ReduceKind::Max, match(o, k), k.var()), {k});
        },
        "scatter_elements_source", "scatter");
    return compute(
        shape_exprs(ds),
        [&](const std::vector<Var>& o) {
          Expr s = source(as_exprs(o));
          return select(s >= Expr(0), updates(at(o, max(s, Expr(0)))), data(as_exprs(o)));
        },
        "scatter_elements", "scatter");
  }
  Tensor reduced = compute(
      shape_exprs(ds),
      [&](const std::vector<Var>& o) {
        IterVar k = reduce_axis(Range(Expr(0), Expr(is[a])), "k");
        Expr u = updates(at(o, k));
        const ReduceKind kind = reduce_kind(r);
        return Reduce::make(kind, masked(kind, match(o, k), u), {k}, Expr());
      },
      "scatter_elements_updates", "scatter");
  return combine(data, reduced, r, "scatter_elements");
}

Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, ScatterReduction r) {
  check_scatter_types("scatter_nd", data, indices, updates, r);
  Shape ds = data->dims(), is = indices->dims(), us = updates->dims();
  check_scatter_nd(ds, is, us);
  if (numel(us) == 0) return copy_of(data, "scatter_nd");
  size_t depth = static_cast<size_t>(is.back());
  Shape rows(is.begin(), is.end() - 1);
  // Does update row `u` aim at data element `head` (its first `depth` coordinates)?
  auto match = [&](const std::vector<Expr>& head, const std::vector<Expr>& u) {
    std::vector<Expr> c;
    std::vector<Expr> at = u;
    at.push_back(Expr(0));
    for (size_t j = 0; j < depth; ++j) {
      at.back() = Expr(static_cast<int64_t>(j));
      c.push_back(wrap_and_clamp_index(indices(at), ds[j]) == head[j]);
    }
    return all_of(c);
  };
  auto row_axes = [&]() {
    std::vector<IterVar> axes;
    for (size_t d = 0; d < rows.size(); ++d)
      axes.push_back(reduce_axis(Range(Expr(0), Expr(rows[d])), "u" + std::to_string(d)));
    return axes;
  };
  auto axis_exprs = [](const std::vector<IterVar>& axes) {
    std::vector<Expr> e;
    for (const auto& a : axes) e.push_back(a.var());
    return e;
  };
  if (r == ScatterReduction::None) {
    // The flat number of the last update row aimed at each head, or negative for none.
    Shape heads(ds.begin(), ds.begin() + depth);
    Tensor source = compute(
        shape_exprs(heads),
        [&](const std::vector<Var>& h) {
          std::vector<IterVar> axes = row_axes();
          Expr flat = Expr(0);
          for (size_t d = 0; d < axes.size(); ++d) flat = flat * Expr(rows[d]) + axes[d].var();
          Expr m = match(as_exprs(h), axis_exprs(axes));
          return axes.empty() ? select(m, Expr(0), Expr(-1)) : max_reduce(masked(ReduceKind::Max, m, flat), axes);
        },
        "scatter_nd_source", "scatter");
    return compute(
        shape_exprs(ds),
        [&](const std::vector<Var>& o) {
          Expr s = source(std::vector<Expr>(o.begin(), o.begin() + depth));
          Expr row = max(s, Expr(0));
          std::vector<Expr> at(rows.size());
          for (size_t d = rows.size(); d-- > 0;) {
            at[d] = d == 0 ? row : row % Expr(rows[d]);
            row = row / Expr(rows[d]);
          }
          at.insert(at.end(), o.begin() + depth, o.end());
          return select(s >= Expr(0), updates(at), data(as_exprs(o)));
        },
        "scatter_nd", "scatter");
  }
  Tensor reduced = compute(
      shape_exprs(ds),
      [&](const std::vector<Var>& o) {
        std::vector<IterVar> axes = row_axes();
        std::vector<Expr> at = axis_exprs(axes);
        at.insert(at.end(), o.begin() + depth, o.end());
        Expr m = match(std::vector<Expr>(o.begin(), o.begin() + depth), axis_exprs(axes));
        Expr u = updates(at);
        const ReduceKind kind = reduce_kind(r);
        if (axes.empty()) return masked(kind, m, u);
        return Reduce::make(kind, masked(kind, m, u), axes, Expr());
      },
      "scatter_nd_updates", "scatter");
  return combine(data, reduced, r, "scatter_nd");
}

}  // namespace tessera::tensor_ir::ops
