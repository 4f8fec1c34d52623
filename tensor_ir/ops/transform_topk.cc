#include "tensor_ir/ops/transform_topk.h"

#include <algorithm>
#include <climits>

#include "runtime/error.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/transform_shape.h"

namespace tessera::tensor_ir::ops {

namespace {

struct Row {
  const Tensor& x;
  size_t axis;
  // x at `j` on the axis and `o` (the other coordinates, axis removed) elsewhere.
  Expr at(const std::vector<Var>& o, const Expr& j) const {
    std::vector<Expr> idx(o.begin(), o.end());
    idx.insert(idx.begin() + axis, j);
    return x(idx);
  }
};

// `value` where `condition` holds (always when undefined), else the identity of the reduction:
// a select rather than a reduction condition, so that the reduction vectorizes.
Expr masked(ReduceKind kind, const Expr& condition, const Expr& value) {
  return condition ? select(condition, value, reduce_identity(kind, value.type())) : value;
}

std::vector<Expr> without(const std::vector<Var>& o, size_t axis) {
  std::vector<Expr> e(o.begin(), o.end());
  e.erase(e.begin() + axis);
  return e;
}

// The k best one at a time: step t takes the best element ranked after step t-1's (value
// first, then index), as a max (min) reduction for the value and a min reduction for the
// lowest index holding it.
std::vector<Tensor> topk_by_selection(const Row& row, const std::vector<Expr>& out, const std::vector<Expr>& rest,
                                      const Expr& n, int64_t k, bool largest) {
  std::vector<Tensor> value_steps, index_steps;
  for (int64_t t = 0; t < k; ++t) {
    // Is x[j] (value v) ranked after step t-1's pick: strictly worse, or equal at a higher index?
    auto after_previous = [&](const std::vector<Var>& o, const Expr& v, const Expr& j) {
      if (t == 0) return Expr();
      std::vector<Expr> idx(o.begin(), o.end());
      Expr pv = value_steps[t - 1](idx), pi = index_steps[t - 1](idx);
      return logical_or(largest ? v < pv : v > pv, logical_and(v == pv, j > pi));
    };
    value_steps.push_back(compute(
        rest,
        [&](const std::vector<Var>& o) {
          IterVar j = reduce_axis(Range(Expr(0), n), "j");
          Expr v = row.at(o, j.var());
          Expr cond = after_previous(o, v, j.var());
          return largest ? max_reduce(masked(ReduceKind::Max, cond, v), {j})
                         : min_reduce(masked(ReduceKind::Min, cond, v), {j});
        },
        "topk_value" + std::to_string(t), "topk"));
    index_steps.push_back(compute(
        rest,
        [&](const std::vector<Var>& o) {
          IterVar j = reduce_axis(Range(Expr(0), n), "j");
          Expr v = row.at(o, j.var());
          Expr cond = v == value_steps[t](std::vector<Expr>(o.begin(), o.end()));
          if (t > 0) cond = logical_and(cond, after_previous(o, v, j.var()));
          return min_reduce(masked(ReduceKind::Min, cond, j.var()), {j});
        },
        "topk_index" + std::to_string(t), "topk"));
  }
  auto gather_steps = [&](const std::vector<Tensor>& steps, const char* name) {
    return compute(
        out,
        [&](const std::vector<Var>& o) {
          std::vector<Expr> idx = without(o, row.axis);
          Expr body = steps[k - 1](idx);
          for (int64_t t = k - 1; t-- > 0;) body = select(Expr(o[row.axis]) == Expr(t), steps[t](idx), body);
          return body;
        },
        name, "topk");
  };
  return {gather_steps(value_steps, "topk_values"), gather_steps(index_steps, "topk_indices")};
}

// Every element's rank (how many elements come before it), then the element of each rank.
std::vector<Tensor> topk_by_rank(const Row& row, const std::vector<Expr>& in, const std::vector<Expr>& out,
                                 const Expr& n, bool largest) {
  // int32 counters where they fit: twice the vector lanes of int64.
  const int64_t* length = as_const_int(n);
  DataType count = length && *length <= INT32_MAX ? runtime::kInt32 : kIndexType;
  Tensor rank = compute(
      in,
      [&](const std::vector<Var>& o) {
        IterVar j = reduce_axis(Range(Expr(0), n), "j");
        std::vector<Var> rest = o;
        rest.erase(rest.begin() + row.axis);
        Expr mine = row.x(std::vector<Expr>(o.begin(), o.end())), other = row.at(rest, j.var());
        Expr before =
            logical_or(largest ? other > mine : other < mine, logical_and(other == mine, Expr(j.var()) < o[row.axis]));
        return sum(masked(ReduceKind::Sum, before, make_one(count)), {j});
      },
      "topk_rank", "topk");
  auto pick = [&](bool values) {
    return compute(
        out,
        [&](const std::vector<Var>& o) {
          IterVar j = reduce_axis(Range(Expr(0), n), "j");
          std::vector<Var> rest = o;
          rest.erase(rest.begin() + row.axis);
          std::vector<Expr> ridx(o.begin(), o.end());
          ridx[row.axis] = j.var();
          Expr is_rank = rank(ridx) == cast(count, o[row.axis]);
          // Exactly one element has each rank, so the max over it is that element.
          return max_reduce(masked(ReduceKind::Max, is_rank, values ? row.at(rest, j.var()) : Expr(j.var())), {j});
        },
        values ? "topk_values" : "topk_indices", "topk");
  };
  return {pick(true), pick(false)};
}

}  // namespace

std::vector<Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  const std::vector<Expr>& in = x->shape;
  const std::vector<Expr> out = topk_dims(in, k, axis);
  if (x.dtype().is_bool()) fail("topk: bool inputs are not supported");
  size_t a = static_cast<size_t>(normalize_axis(axis, static_cast<int64_t>(in.size())));
  Row row{x, a};
  const bool empty = std::any_of(out.begin(), out.end(), [](const Expr& d) { return is_const_int(d, 0); });
  if (empty) {
    // Nothing to select: empty outputs of the right types.
    auto empty = [&](DataType t, const char* name) {
      return compute(
          out, [&](const std::vector<Var>&) { return make_zero(t); }, name, "topk");
    };
    return {empty(x.dtype(), "topk_values"), empty(kIndexType, "topk_indices")};
  }
  if (k <= kTopkSelectionMaxK) {
    std::vector<Expr> rest = in;
    rest.erase(rest.begin() + a);
    return topk_by_selection(row, out, rest, in[a], k, largest);
  }
  return topk_by_rank(row, in, out, in[a], largest);
}

}  // namespace tessera::tensor_ir::ops
