// ONNX TensorProto <-> NDArray, including data stored in external files, which are read only
// from inside the model's folder.
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

#include "runtime/ndarray.h"

namespace tessera::frontend::onnx {

// The Tessera dtype of an ONNX TensorProto_DataType; throws naming `what` for strings,
// complex numbers, bfloat16 and unknown codes.
runtime::DataType dtype_from_onnx(int onnx_type, const std::string& what);

// The ONNX TensorProto_DataType of a Tessera dtype; throws for one ONNX has not.
int onnx_type_of(runtime::DataType dtype);

runtime::NDArray tensor_from_proto(const ::onnx::TensorProto& t, const std::string& base_dir);

}  // namespace tessera::frontend::onnx
