// Workloads: what a kernel computes, keyed so identical layers in different models share tuning
// records. The key is the SHA-256 of the canonical printed compute definition (with shapes and
// dtypes); the structure key erases the shapes, so similar workloads (the same conv at another
// size) can try each other's schedules.
#pragma once
#include <string>
#include <vector>

#include "autotune/database.h"
#include "tensor_ir/tensor.h"

namespace tessera::autotune {

// The workload of a kernel computing `outputs`; `description` is for people.
WorkloadEntry make_workload(const std::vector<tensor_ir::Tensor>& outputs, const std::string& description);

}  // namespace tessera::autotune
