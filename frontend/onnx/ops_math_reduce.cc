// Converters of ONNX reductions, ArgMax/ArgMin, CumSum and CumProd.
#include "frontend/onnx/ops_math.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;

namespace {

void reduction(ConverterTable& t, const std::string& onnx_op, const std::string& op) {
  t.add(onnx_op, one([onnx_op, op](ConvertContext& c) {
          // axes is an attribute until it becomes an optional input: ReduceSum at opset 13, the rest at 18.
          bool axes_input = c.opset() >= 18 || (onnx_op == "ReduceSum" && c.opset() >= 13);
          std::vector<int64_t> axes;
          bool noop = false;
          if (axes_input) {
            c.check_attrs({"keepdims", "noop_with_empty_axes"});
            if (c.has_input(1)) axes = c.constant_ints(1, "axes");
            noop = c.attr_int("noop_with_empty_axes", 0) != 0;
          } else {
            c.check_attrs({"axes", "keepdims"});
            axes = c.attr_ints("axes", {});
          }
          int64_t keepdims = c.attr_int("keepdims", 1);
          if (keepdims != 0 && keepdims != 1) c.error("keepdims must be 0 or 1, got " + std::to_string(keepdims));
          if (axes.empty() && noop) return c.input(0);
          // ReduceMax and ReduceMin take bool from opset 20: any and all, as bytes of 0 and 1 (an
          // empty reduction gives their identities, false and true).
          if (c.input_type(0).dtype.is_bool() && (op == "reduce_max" || op == "reduce_min")) {
            Expr bytes = c.call("cast", {c.input(0)}, {{"dtype", std::string("uint8")}});
            Expr r = c.call(op, {bytes}, {{"axes", axes}, {"keepdims", keepdims}});
            return c.call("cast", {r}, {{"dtype", std::string("bool")}});
          }
          return c.call(op, {c.input(0)}, {{"axes", axes}, {"keepdims", keepdims}});
        }),
        {1});
}

void arg_reduction(ConverterTable& t, const std::string& onnx_op, const std::string& op) {
  t.add(onnx_op, one([op](ConvertContext& c) {
          c.check_attrs({"axis", "keepdims", "select_last_index"});
          return c.call(op, {c.input(0)},
                        {{"axis", c.attr_int("axis", 0)},
                         {"keepdims", c.attr_int("keepdims", 1)},
                         {"select_last_index", c.attr_int("select_last_index", 0)}});
        }));
}

// CumSum, and CumProd (opset 26).
Expr running(ConvertContext& c, const char* op) {
  c.check_attrs({"exclusive", "reverse"});
  std::vector<int64_t> axis = c.constant_ints(1, "axis");
  if (axis.size() != 1) c.error("axis must hold one value, got " + std::to_string(axis.size()));
  return c.call(op, {c.input(0)},
                {{"axis", axis[0]}, {"exclusive", c.attr_int("exclusive", 0)}, {"reverse", c.attr_int("reverse", 0)}});
}

}  // namespace

void register_math_reduce_converters(ConverterTable& t) {
  reduction(t, "ReduceSum", "reduce_sum");
  reduction(t, "ReduceMean", "reduce_mean");
  reduction(t, "ReduceMax", "reduce_max");
  reduction(t, "ReduceMin", "reduce_min");
  reduction(t, "ReduceProd", "reduce_prod");
  reduction(t, "ReduceL1", "reduce_l1");
  reduction(t, "ReduceL2", "reduce_l2");
  reduction(t, "ReduceLogSum", "reduce_log_sum");
  reduction(t, "ReduceLogSumExp", "reduce_log_sum_exp");
  reduction(t, "ReduceSumSquare", "reduce_sum_square");
  arg_reduction(t, "ArgMax", "argmax");
  arg_reduction(t, "ArgMin", "argmin");
  t.add("CumSum", one([](ConvertContext& c) { return running(c, "cumsum"); }), {1});
  t.add("CumProd", one([](ConvertContext& c) { return running(c, "cumprod"); }), {1});
}

}  // namespace tessera::frontend::onnx
