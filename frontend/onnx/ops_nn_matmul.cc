// Converters of ONNX MatMul, Gemm, Einsum, MatMulInteger and QLinearMatMul.
#include "frontend/onnx/ops_nn.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

void register_nn_matmul_converters(ConverterTable& t) {
  t.add("MatMul", nn::one([](ConvertContext& c) {
          c.check_attrs({});
          return c.call("matmul", {c.input(0), c.input(1)});
        }));
  // Before opset 7 Gemm had a `broadcast` flag; C broadcasting is always allowed here, so
  // either value gives the same result. C became optional in opset 11.
  t.add("Gemm", nn::one([](ConvertContext& c) {
          c.check_attrs({"alpha", "beta", "transA", "transB", "broadcast"});
          std::vector<Expr> args{c.input(0), c.input(1)};
          if (c.has_input(2)) args.push_back(c.input(2));
          else if (c.opset() < 11) c.error("input C is required before opset 11");
          return c.call("gemm", args,
                        {{"trans_a", c.attr_int("transA", 0)},
                         {"trans_b", c.attr_int("transB", 0)},
                         {"alpha", double(c.attr_float("alpha", 1.0f))},
                         {"beta", double(c.attr_float("beta", 1.0f))}});
        }));
  t.add("Einsum", nn::one([](ConvertContext& c) {
          c.check_attrs({"equation"});
          std::vector<Expr> args;
          for (size_t i = 0; i < c.num_inputs(); ++i) args.push_back(c.input(i));
          return c.call("einsum", args, {{"equation", c.attr_string("equation", "")}});
        }));
  t.add("MatMulInteger", nn::one([](ConvertContext& c) {
          c.check_attrs({});
          return c.call("matmul_integer", {c.input(0), c.input(1), nn::input_or_zero(c, 2, c.input_type(0).dtype),
                                           nn::input_or_zero(c, 3, c.input_type(1).dtype)});
        }));
  t.add("QLinearMatMul", nn::one([](ConvertContext& c) {
          c.check_attrs({});
          std::vector<Expr> args;
          for (size_t i = 0; i < 8; ++i) {
            // Opset 21's float16 scales, as float32 (every float16 is one).
            const bool half_scale = (i == 1 || i == 4 || i == 6) && c.input_type(i).dtype == runtime::kFloat16;
            args.push_back(half_scale ? c.call("cast", {c.input(i)}, {{"dtype", std::string("float32")}}) : c.input(i));
          }
          return c.call("qlinear_matmul", args);
        }));
}

}  // namespace tessera::frontend::onnx
