// Converters of elementwise, broadcasting and reduction ONNX operators.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

void register_math_converters(ConverterTable& t) {
  t.add("Relu", [](ConvertContext& c) { return std::vector<relay_ir::Expr>{c.call("relu", {c.input(0)})}; });
  t.add("Add", [](ConvertContext& c) { return std::vector<relay_ir::Expr>{c.call("add", {c.input(0), c.input(1)})}; });
}

}  // namespace tessera::frontend::onnx
