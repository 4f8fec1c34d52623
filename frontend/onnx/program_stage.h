// A stage of an ONNX program: a run of static nodes, imported by the importer at the shapes (and
// the values it needs as constants) the program executor gives it.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/importer.h"
#include "relay_ir/program.h"

namespace tessera::frontend::onnx {

// `proto`: the stage's nodes and outputs (its inputs are added at each specialization);
// `inputs`: the values it reads from the program, in order; `constant_names`: the initializers
// (and bound inputs) it reads, whose values `constants` holds.
std::shared_ptr<const relay_ir::StageSource> onnx_stage(
    ::onnx::ModelProto proto, std::vector<std::string> inputs, std::vector<std::string> constant_names,
    std::shared_ptr<const std::map<std::string, runtime::NDArray>> constants, std::string base_dir,
    ConstantEvaluator evaluate);

}  // namespace tessera::frontend::onnx
