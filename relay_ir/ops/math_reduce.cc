// Reductions, arg-reductions and cumulative sums.
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

void reduction(OpRegistry& r, const std::string& name, const std::string& doc, ReduceFn f) {
  r.add({name, doc + " over axes (empty: all); keepdims keeps them as size 1", 1, 1,
         {{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{1}}}, reduce_relation, OpPattern::CommReduce,
         single_output([f](const In& in, const Attrs& a) { return f(in[0], a.get_ints("axes"), a.get_int("keepdims") != 0); })});
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
  reduction(r, "reduce_sum", "sum", ops::reduce_sum);
  reduction(r, "reduce_mean", "mean", ops::reduce_mean);
  reduction(r, "reduce_max", "maximum", ops::reduce_max);
  reduction(r, "reduce_min", "minimum", ops::reduce_min);
  reduction(r, "reduce_prod", "product", ops::reduce_prod);
  reduction(r, "reduce_l1", "sum of |x|", ops::reduce_l1);
  reduction(r, "reduce_l2", "sqrt of the sum of x^2", ops::reduce_l2);
  reduction(r, "reduce_sum_square", "sum of x^2", ops::reduce_sum_square);
  reduction(r, "reduce_log_sum", "log of the sum", ops::reduce_log_sum);
  reduction(r, "reduce_log_sum_exp", "log of the sum of e^x (computed without overflow)", ops::reduce_log_sum_exp);
  for (bool is_max : {true, false}) {
    std::string name = is_max ? "argmax" : "argmin";
    r.add({name, "int64 index of the " + std::string(is_max ? "largest" : "smallest") +
                     " element along axis: the first, or the last with select_last_index",
           1, 1, {{"axis", int64_t{0}}, {"keepdims", int64_t{1}}, {"select_last_index", int64_t{0}}}, arg_reduce_relation,
           OpPattern::CommReduce, single_output([is_max](const In& in, const Attrs& a) {
             auto f = is_max ? ops::argmax : ops::argmin;
             return f(in[0], a.get_int("axis"), a.get_int("keepdims") != 0, a.get_int("select_last_index") != 0);
           })});
  }
  r.add({"cumsum", "running sum along axis; exclusive leaves the element out, reverse runs from the end", 1, 1,
         {{"axis", int64_t{0}}, {"exclusive", int64_t{0}}, {"reverse", int64_t{0}}}, cumsum_relation, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::cumsum(in[0], a.get_int("axis"), a.get_int("exclusive") != 0, a.get_int("reverse") != 0);
         })});
}

}  // namespace tessera::relay_ir
