// Tuning tasks: the distinct kernels of a model (after its graph passes), each with its
// workload, how often one run of the model calls it (its weight) and its arithmetic cost.
#pragma once
#include <string>
#include <vector>

#include "autotune/database.h"
#include "relay_ir/compute_of_call.h"
#include "relay_ir/module.h"

namespace tessera::autotune {

struct Task {
  WorkloadEntry workload;
  std::string kernel;  // the kernel as graph-IR text: a module whose main calls it once
                       // (what measurement processes rebuild it from)
  relay_ir::CallCompute compute;
  int weight = 1;    // calls per run of the model
  double flops = 0;  // arithmetic operations per call (multiply-add = 2)
  // The inputs earlier kernels of the model write on every run (all but its constants, the
  // weights): measurement rewrites them before each timed call (autotune/measure.h).
  std::vector<size_t> written_inputs;
};

// The distinct kernels of `optimized` (a module after driver::optimize for the target of
// `hardware`), heaviest first (weight * flops). Views (reshapes) are not kernels.
std::vector<Task> extract_tasks(const relay_ir::Module& optimized, const schedule::HardwareParams& hardware);

// A task rebuilt from its graph-IR text (in a measurement process); every input counts as written.
Task task_from_kernel(const std::string& kernel_text, const schedule::HardwareParams& hardware);
// The task of one typed call of a graph (what build() lowers as one kernel); its constant
// arguments are the inputs not written.
Task task_from_call(const relay_ir::CallNode* call, const schedule::HardwareParams& hardware);

// The default template's schedule of the task, as a trace: every measured comparison's baseline.
std::string default_trace(const Task& task);

// Arithmetic operations of the computation behind `outputs`: per stage, output elements times
// reduction iterations times the arithmetic nodes of its body.
double estimate_flops(const std::vector<tensor_ir::Tensor>& outputs);

}  // namespace tessera::autotune
