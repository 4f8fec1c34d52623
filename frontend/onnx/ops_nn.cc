// Converters of ONNX matrix, convolution, pooling, normalization, softmax and loss operators.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

void register_nn_converters(ConverterTable& t) {}

}  // namespace tessera::frontend::onnx
