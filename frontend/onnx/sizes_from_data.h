// Values the data gives (a model input, or a value computed from one) that set output sizes
// without being integer sizes themselves. A rewrite of the model before it becomes a program
// (frontend/onnx/program.h) turns them into integer sizes, which a stage takes as sizes, so that it
// is built for every size (and a module can hold it) rather than for each value met:
//  - Resize (opset 11 on) and Upsample (9) by scales: their output sizes are floor(size * scale),
//    and the scales set where each output reads. As ONNX Runtime and TVM Relax do with a shape
//    function, a step before the node (kResizeOutputSize, the builtin resize_output_size) computes
//    the sizes on the host and gives them to the node as one input past its own, marked by
//    kSizesFromScales; its kernel reads the scales as it runs.
//    Where the first scales are constants of ones (a Concat of ones and the rest, as exporters
//    write a scale_factor beside a batch and channels that keep their sizes), the node is marked
//    with their count (kUnitScales), so that only the other axes interpolate and the leading ones
//    keep their sizes (a convolution after it keeps constant channels).
//  - OneHot's depth: cast to int64 first, as ONNX says a depth of another type is.
#pragma once
#include <optional>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/importer.h"

namespace tessera::frontend::onnx {

// Set to 1 on a node given its output sizes, computed from its scales, as its last input.
inline constexpr const char* kSizesFromScales = "tessera.sizes_from_scales";
// Set on such a node to the number of its leading scales that are constants of ones.
inline constexpr const char* kUnitScales = "tessera.unit_scales";
// The op_type of the node computing them (a program step; Tessera's own, set by this rewrite only).
inline constexpr const char* kResizeOutputSize = "tessera.ResizeOutputSize";

// The index of the sizes input a rewritten Resize or Upsample has.
int sizes_from_scales_input(const ::onnx::NodeProto& node);

// `model` with each such value made an integer size; none where no node (in any graph) takes one.
std::optional<::onnx::ModelProto> with_sizes_from_data(const ::onnx::ModelProto& model, const ImportOptions& options);

}  // namespace tessera::frontend::onnx
