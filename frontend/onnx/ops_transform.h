// Shared pieces of the transform family's ONNX converters (ops_transform*.cc).
#pragma once
#include <vector>

#include "frontend/onnx/converter.h"
#include "runtime/element.h"
#include "runtime/ndarray.h"

namespace tessera::frontend::onnx {

// Constant, Shape, Size, ConstantOfShape, Range, EyeLike (ops_transform_const.cc).
void register_transform_const_converters(ConverterTable& t);
// Gather*, Scatter* (ops_transform_index.cc).
void register_transform_index_converters(ConverterTable& t);
// Resize, Upsample, TopK (ops_transform_resize.cc).
void register_transform_resize_converters(ConverterTable& t);

using runtime::element_as_double;
using runtime::store_element;

// ONNX Reshape's target for an input of shape `in`: 0 copies the input dimension (unless allowzero),
// one -1 is inferred; an invalid one is the node's error. Shape values (dim_values.h) reshape so too.
std::vector<int64_t> reshape_target(const ConvertContext& c, const std::vector<int64_t>& in, std::vector<int64_t> shape,
                                    bool allowzero);

// A constant input holding one number (a scalar or a one-element tensor of any numeric dtype).
double constant_scalar(const ConvertContext& c, size_t input, const std::string& what);

// An `axes` attribute or input (negative axes counting from the back) as axes of a rank-`rank`
// input; one out of range or named twice is the node's error.
std::vector<int64_t> normalized_axes(const ConvertContext& c, std::vector<int64_t> axes, int64_t rank);

}  // namespace tessera::frontend::onnx
