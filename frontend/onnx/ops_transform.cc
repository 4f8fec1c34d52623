// Converters of ONNX shape and data-movement operators.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

void register_transform_converters(ConverterTable& t) {}

}  // namespace tessera::frontend::onnx
