// Reductions, arg-reductions and cumulative sums, with their gradients. A reduction's cotangent
// is first reshaped to the input's rank (the reduced axes kept with size 1), so that it
// broadcasts against the input.
#include "relay_ir/ops/grad_util.h"
#include "relay_ir/ops/math_ops.h"
#include "relay_ir/ops/type_relations.h"
#include "runtime/error.h"
#include "tensor_ir/ops/math_reduce.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using tensor_ir::Tensor;

namespace {

using In = std::vector<Tensor>;
using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);
using E = const Expr&;

struct Reduction {
  const TensorTypeNode* x;
  std::vector<int64_t> axes;  // normalized, every axis when the call names none
  std::vector<int64_t> kept;  // x's shape with the reduced axes 1
};

Reduction reduction_of(const Expr& c) {
  Reduction red;
  red.x = &as_tensor(arg(c, 0)->checked_type, "reduce input");
  auto rank = static_cast<int64_t>(red.x->ndim());
  red.axes = as_call(c).attrs.get_ints("axes");
  if (red.axes.empty())
    for (int64_t d = 0; d < rank; ++d) red.axes.push_back(d);
  red.kept = red.x->shape;
  for (auto& a : red.axes) {
    a = a < 0 ? a + rank : a;
    red.kept[a] = 1;
  }
  return red;
}

// A value shaped like the reduction's result, with the reduced axes back as size 1.
Expr kept(const Reduction& red, E value) {
  return tensor_of(value).shape == red.kept ? value : call("reshape", {value}, {{"shape", red.kept}});
}

Expr to_input_shape(const Reduction& red, E value) { return call("broadcast_to", {value}, {{"shape", red.x->shape}}); }

// The same reduction of another value, keeping the reduced axes.
Expr reduce_kept(const char* op, const Reduction& red, E value) {
  return call(op, {value}, {{"axes", red.axes}, {"keepdims", int64_t{1}}});
}

// A reduction's gradient from the kept-shaped cotangent g, the kept-shaped result y and x.
using ReduceRule = std::function<Expr(const Reduction& red, E x, E y, E g)>;

GradientFn reduction_gradient(ReduceRule rule) {
  return [rule](E c, E g) {
    Reduction red = reduction_of(c);
    return std::vector<Expr>{rule(red, arg(c, 0), kept(red, c), kept(red, g))};
  };
}

// reduce_max / reduce_min: to the elements equal to the result; ties share it evenly (as
// PyTorch's amax / amin).
Expr extremum(const Reduction& red, E x, E y, E g) {
  Expr hit = as_mask(compare("equal", x, y), x);
  return div(mul(hit, g), reduce_kept("reduce_sum", red, hit));
}

// reduce_prod: the product of the other elements, without dividing by zero. With x's zeros
// replaced by ones (safe), it is prod(safe) / safe times w, where w is, for a zero element,
// 1 if it is the only zero and 0 otherwise, and for the others the product of the zero
// elements themselves (x where it is zero, 1 elsewhere): 0 as soon as there is a zero, but
// with the right derivative, so that the gradient of this gradient stays exact where one
// element is zero (at two or more zeros it is exact in value only).
Expr product(const Reduction& red, E x, E, E g) {
  Expr one = scalar_like(1, x);
  Expr is_zero = compare("equal", x, scalar_like(0, x));
  Expr safe = select(is_zero, one, x);
  Expr zeros = reduce_kept("reduce_sum", red, as_mask(is_zero, x));
  Expr only_zero = as_mask(compare("equal", zeros, one), x);
  Expr zero_product = reduce_kept("reduce_prod", red, select(is_zero, x, one));
  Expr w = select(is_zero, only_zero, zero_product);
  return mul(mul(g, div(reduce_kept("reduce_prod", red, safe), safe)), w);
}

void reduction(OpRegistry& r, const std::string& name, const std::string& doc, ReduceFn f, ReduceRule gradient) {
  r.add({name,
         doc + " over axes (empty: all); keepdims keeps them as size 1",
         1,
         1,
         {{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{1}}},
         reduce_relation,
         OpPattern::CommReduce,
         single_output(
             [f](const In& in, const Attrs& a) { return f(in[0], a.get_ints("axes"), a.get_int("keepdims") != 0); }),
         "reduce",
         reduction_gradient(std::move(gradient))});
}

// A running sum's cotangent is the running sum of the cotangent the other way round.
std::vector<Expr> cumsum_gradient(E c, E g) {
  Attrs attrs = as_call(c).attrs;
  attrs.set("reverse", int64_t{1 - attrs.get_int("reverse")});
  return {call("cumsum", {g}, attrs)};
}

Type cumsum_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = as_tensor(args.at(0), "input");
  if (x.dtype.is_bool()) fail("input must be numeric, got bool");
  if (x.ndim() == 0) fail("input must have at least one dimension");
  ops::reduce_axes({attrs.get_int("axis")}, x.ndim(), "axis");
  for (const char* flag : {"exclusive", "reverse"})
    if (attrs.get_int(flag) != 0 && attrs.get_int(flag) != 1) fail(flag, " must be 0 or 1, got ", attrs.get_int(flag));
  return args[0];
}

}  // namespace

void register_math_reduce_ops(OpRegistry& r) {
  reduction(r, "reduce_sum", "sum", ops::reduce_sum,
            [](const Reduction& red, E, E, E g) { return to_input_shape(red, g); });
  reduction(r, "reduce_mean", "mean", ops::reduce_mean, [](const Reduction& red, E x, E, E g) {
    int64_t count = 1;
    for (int64_t a : red.axes) count *= red.x->shape[a];
    return to_input_shape(red, div(g, scalar_like(static_cast<double>(count), x)));
  });
  reduction(r, "reduce_max", "maximum", ops::reduce_max, extremum);
  reduction(r, "reduce_min", "minimum", ops::reduce_min, extremum);
  reduction(r, "reduce_prod", "product", ops::reduce_prod, product);
  reduction(r, "reduce_l1", "sum of |x|", ops::reduce_l1,
            [](const Reduction&, E x, E, E g) { return mul(g, call("sign", {x})); });
  // x / ||x||, and 0 where the norm is 0 (x is all zeros there).
  reduction(r, "reduce_l2", "sqrt of the sum of x^2", ops::reduce_l2, [](const Reduction&, E x, E y, E g) {
    Expr norm = select(compare("equal", y, scalar_like(0, y)), scalar_like(1, y), y);
    return mul(g, div(x, norm));
  });
  reduction(r, "reduce_sum_square", "sum of x^2", ops::reduce_sum_square,
            [](const Reduction&, E x, E, E g) { return mul(g, mul(scalar_like(2, x), x)); });
  // log(sum x): 1 / sum, the sum being e^y.
  reduction(r, "reduce_log_sum", "log of the sum", ops::reduce_log_sum,
            [](const Reduction& red, E, E y, E g) { return to_input_shape(red, div(g, call("exp", {y}))); });
  reduction(r, "reduce_log_sum_exp", "log of the sum of e^x (computed without overflow)", ops::reduce_log_sum_exp,
            [](const Reduction&, E x, E y, E g) { return mul(g, call("exp", {sub(x, y)})); });
  for (bool is_max : {true, false}) {
    std::string name = is_max ? "argmax" : "argmin";
    r.add({name,
           "int64 index of the " + std::string(is_max ? "largest" : "smallest") +
               " element along axis: the first, or the last with select_last_index",
           1,
           1,
           {{"axis", int64_t{0}}, {"keepdims", int64_t{1}}, {"select_last_index", int64_t{0}}},
           arg_reduce_relation,
           OpPattern::CommReduce,
           single_output([is_max](const In& in, const Attrs& a) {
             auto f = is_max ? ops::argmax : ops::argmin;
             return f(in[0], a.get_int("axis"), a.get_int("keepdims") != 0, a.get_int("select_last_index") != 0);
           }),
           "reduce"});
  }
  r.add({"cumsum",
         "running sum along axis; exclusive leaves the element out, reverse runs from the end",
         1,
         1,
         {{"axis", int64_t{0}}, {"exclusive", int64_t{0}}, {"reverse", int64_t{0}}},
         cumsum_relation,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::cumsum(in[0], a.get_int("axis"), a.get_int("exclusive") != 0, a.get_int("reverse") != 0);
         }),
         "reduce",
         cumsum_gradient});
  r.add({"cumprod",
         "running product along axis; exclusive leaves the element out, reverse runs from the end",
         1,
         1,
         {{"axis", int64_t{0}}, {"exclusive", int64_t{0}}, {"reverse", int64_t{0}}},
         cumsum_relation,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::cumprod(in[0], a.get_int("axis"), a.get_int("exclusive") != 0, a.get_int("reverse") != 0);
         }),
         "reduce"});
}

}  // namespace tessera::relay_ir
