// Converters of ONNX BatchNormalization (inference; training mode, opset 14's training_mode=1,
// as batch_norm_train), InstanceNormalization, LayerNormalization, LRN and
// MeanVarianceNormalization (opsets 1-17).
#include "frontend/onnx/ops_nn.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

bool wants_output(const ConvertContext& c, int i) { return c.node().output_size() > i && !c.node().output(i).empty(); }

// An ONNX TensorProto element type as a float dtype name (LayerNormalization's stash_type).
std::string float_type_name(const ConvertContext& c, int64_t onnx_type) {
  switch (onnx_type) {
    case ::onnx::TensorProto::FLOAT:
      return "float32";
    case ::onnx::TensorProto::DOUBLE:
      return "float64";
    case ::onnx::TensorProto::FLOAT16:
      return "float16";
    default:
      c.error("stash_type " + std::to_string(onnx_type) + " is not supported (float, double or float16)");
  }
}

}  // namespace

void register_nn_norm_converters(ConverterTable& t) {
  t.add("BatchNormalization", [](ConvertContext& c) {
    c.check_attrs({"epsilon", "momentum", "spatial", "is_test", "consumed_inputs", "training_mode"});
    if (c.opset() < 7 && c.has_attr("is_test") && c.attr_int("is_test", 0) == 0)
      c.error("is_test=0 (training) is not supported; training mode comes with opset 14's training_mode=1");
    if (c.attr_int("spatial", 1) != 1) c.error("spatial=0 (statistics per activation) is not supported");
    std::vector<Expr> args{c.input(0), c.input(1), c.input(2), c.input(3), c.input(4)};
    double epsilon = c.attr_float("epsilon", 1e-5f);
    if (c.attr_int("training_mode", 0) != 0) {
      // Batch statistics; the outputs are y and the updated running mean and variance.
      Expr r = c.call("batch_norm_train", args,
                      {{"epsilon", epsilon}, {"momentum", double(c.attr_float("momentum", 0.9f))}});
      std::vector<Expr> outs;
      for (int i = 0; i < c.node().output_size() && i < 3; ++i) outs.push_back(relay_ir::tuple_get(r, i));
      return outs;
    }
    for (int i = 1; i < c.node().output_size(); ++i)
      if (wants_output(c, i))
        c.error("the running or saved statistics outputs exist only in training mode (opset 14's training_mode=1)");
    return std::vector<Expr>{c.call("batch_norm", args, {{"epsilon", epsilon}})};
  });
  t.add("InstanceNormalization", nn::one([](ConvertContext& c) {
          c.check_attrs({"epsilon"});
          return c.call("instance_norm", {c.input(0), c.input(1), c.input(2)},
                        {{"epsilon", double(c.attr_float("epsilon", 1e-5f))}});
        }));
  t.add("LayerNormalization", [](ConvertContext& c) {
    c.check_attrs({"axis", "epsilon", "stash_type"});
    std::vector<Expr> args{c.input(0), c.input(1)};
    if (c.has_input(2)) args.push_back(c.input(2));
    Expr r = c.call("layer_norm", args,
                    {{"axis", c.attr_int("axis", -1)},
                     {"epsilon", double(c.attr_float("epsilon", 1e-5f))},
                     {"stat_dtype", float_type_name(c, c.attr_int("stash_type", ::onnx::TensorProto::FLOAT))}});
    std::vector<Expr> outs;
    for (int i = 0; i < c.node().output_size(); ++i) outs.push_back(relay_ir::tuple_get(r, i));
    return outs;
  });
  t.add("LRN", nn::one([](ConvertContext& c) {
          c.check_attrs({"alpha", "beta", "bias", "size"});
          return c.call("lrn", {c.input(0)},
                        {{"size", c.attr_int("size")},
                         {"alpha", double(c.attr_float("alpha", 1e-4f))},
                         {"beta", double(c.attr_float("beta", 0.75f))},
                         {"bias", double(c.attr_float("bias", 1.0f))}});
        }));
  t.add("MeanVarianceNormalization", nn::one([](ConvertContext& c) {
          c.check_attrs({"axes"});
          return c.call("mean_variance_normalization", {c.input(0)}, {{"axes", c.attr_ints("axes", {0, 2, 3})}});
        }));
}

}  // namespace tessera::frontend::onnx
