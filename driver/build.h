// build(): a graph module becomes a runnable one. Runs the graph passes, lowers every operator
// call to a kernel (its compute definition under a schedule: a custom one registered for its
// op, the best record of the tuning database, one transferred from a similar workload, or the
// default template of its tag; KernelInfo::schedule says which), compiles the kernels for the
// target, and plans memory for the executor.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "relay_ir/module.h"
#include "runtime/graph_executor.h"
#include "targets/target.h"
#include "tensor_ir/stmt.h"

namespace tessera::driver {

class ConstantPool;

struct BuildOptions {
  // The graph passes (relay_ir/transforms): 0 none; 1 and 2 fold constants and batch norms,
  // eliminate common subexpressions and fuse; 3 also packs weights in their kernels' layouts,
  // takes Winograd for 3x3 convolutions and runs depthwise networks channels-last. 3, the fastest
  // on the benchmark models (benchmarks/e2e.py --opt-levels 2 3), is the default. Batch-norm
  // folding and Winograd round differently from the model's own order of operations. GPU targets
  // (opencl, cuda) run the passes of level 2 at most: level 3's layouts are the CPU's.
  int opt_level = 3;
  // The tuning database to take schedules from; empty: none (the default schedules).
  std::string db_path;
  // JIT-compile the kernels so the result runs in this process. Off: lower and plan only, for
  // export (which compiles the kernels again as an object) or a target this host cannot run.
  bool jit = true;
  // A kernel with no record of its own tries the records of similar workloads (other shapes),
  // measuring the best few against its default schedule and storing the results
  // (autotune/transfer.h). Only for targets this host runs, with a database.
  bool transfer = true;
  // For a module of symbolic sizes: the sizes its choices of tiles and forms are made at
  // (dimension variable -> value; tensor_ir/size_hint.h). The code runs at any size.
  std::map<std::string, int64_t> size_hints;
  // Constants shared with the other builds of the same model (driver/constant_pool.h); null: none.
  std::shared_ptr<ConstantPool> constants;
};

// Throws tessera::Error naming the first invalid option (opt_level outside 0-3).
void validate(const BuildOptions& options);

// What was built, for `tessera inspect` and tests.
struct KernelInfo {
  std::string name;       // the kernel's symbol
  std::string op;         // the operator (or fused group) it computes
  std::string signature;  // argument types
  std::string lowered;    // the lowered loop nest
  int calls = 0;          // steps that call it
  std::string workload;   // its workload key in the tuning database
  std::string schedule;   // where its schedule came from: "default", "tuned (record 12)", ...
  int64_t record = 0;     // the tuning record its schedule replays; 0: none (a template or custom)
};

struct BuildResult {
  std::shared_ptr<runtime::GraphExecutor> executor;  // null unless built with jit
  std::vector<KernelInfo> kernels;
  relay_ir::Module optimized;  // the module after graph passes
  // What export_module needs to compile the same kernels again for a file.
  runtime::GraphPlan plan;
  std::vector<tensor_ir::LoweredFunc> lowered;
  targets::Target target;
};

BuildResult build(const relay_ir::Module& module, const targets::Target& target, const BuildOptions& options = {});

// The graph passes build() runs at `opt_level` for a target of `hardware` (whose vector registers
// size the packed layouts; a GPU's stop at level 2, before the CPU layouts), alone: what the tuner
// extracts tasks from.
relay_ir::Module optimize(const relay_ir::Module& module, const schedule::HardwareParams& hardware, int opt_level);

}  // namespace tessera::driver
