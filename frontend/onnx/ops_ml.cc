// Converters of the ai.onnx.ml domain (the classical machine-learning operators scikit-learn's
// exporters write), registered under domain-qualified names ("ai.onnx.ml.Binarizer").
#include "frontend/onnx/ops_math.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;

void register_ml_converters(ConverterTable& t) {
  register_ml_tree_ensemble_converter(t);
  // 1 where x > threshold, else 0 (NaN: 0), in x's type.
  t.add("ai.onnx.ml.Binarizer", [](ConvertContext& c) {
    c.check_attrs({"threshold"});
    const runtime::DataType dtype = c.input_type(0).dtype;
    const Expr above = c.call("greater", {c.input(0), scalar_constant(c.attr_float("threshold", 0.0f), dtype)});
    return std::vector<Expr>{c.call("cast", {above}, {{"dtype", dtype.str()}})};
  });
  // X's elements at indices Y along its last axis; a 1-D X gives one row [1, len(Y)].
  t.add("ai.onnx.ml.ArrayFeatureExtractor", [](ConvertContext& c) {
    c.check_attrs({});
    Expr x = c.input(0);
    if (c.input_type(0).ndim() == 1)
      x = c.call("reshape", {x}, {{"shape", std::vector<int64_t>{1, c.input_type(0).shape[0]}}});
    Expr indices = c.input(1);
    if (c.input_type(1).ndim() != 1)
      indices = c.call("reshape", {indices}, {{"shape", std::vector<int64_t>{c.input_type(1).numel()}}});
    return std::vector<Expr>{c.call("take", {x, indices}, {{"axis", int64_t{-1}}})};
  });
}

}  // namespace tessera::frontend::onnx
