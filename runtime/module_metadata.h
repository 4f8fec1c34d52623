// What an exported module says about itself besides its code: the target it was compiled for,
// the CPU features that code needs, the kernels' signatures and the execution plan (whose
// constants live in the weights section); for a device target (format version 2), the device
// programs, whose code (OpenCL C, PTX) the metadata holds while the code section stays empty; for
// a model of symbolic sizes (version 5), the static plans of its hot sizes and the dimensions its
// plan needs non-empty; for a model with control flow (version 6), its program and the plans of its
// stages. Encoded as
// little-endian binary: counts and lengths are u32, sizes and offsets u64, strings a u32 length
// then bytes, dtypes their names.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device_program.h"
#include "runtime/graph_plan.h"
#include "runtime/kernel.h"
#include "runtime/program_plan.h"

namespace tessera::runtime {

struct ModuleMetadata {
  std::string target;                     // canonical target string ("llvm -mtriple=... -mcpu=...")
  std::string arch;                       // "x86_64", "aarch64": what the code runs on
  std::vector<std::string> cpu_features;  // LLVM feature names the code may use ("avx2", ...)
  std::vector<KernelSignature> kernels;
  GraphPlan plan;
  std::vector<DeviceProgramSpec> device_programs;  // none for a CPU target
  // Version 5 on: static plans of the same model at hot sizes beside a plan of symbolic sizes,
  // each serving the calls of its sizes (GraphExecutor::specialize); their kernels are among the
  // module's.
  std::vector<GraphPlan> specialized;
  // Version 6 on: a program (a model with control flow or data-dependent shapes), whose stages
  // are the plans `stages` (ProgramStep::stage indexes them); the plan is then empty.
  std::shared_ptr<const ProgramPlan> program;
  std::vector<GraphPlan> stages;
};

// The plan, then the specialized ones, then a program's stages.
std::vector<const GraphPlan*> plans_of(const ModuleMetadata& metadata);

// Where each constant of each plan (in plans_of order) lies in the weights section, each 64-byte
// aligned, a constant that several plans share (the same bytes) once; and the section's size.
struct WeightsLayout {
  std::vector<std::vector<uint64_t>> offsets;
  uint64_t bytes = 0;
};
WeightsLayout weights_layout(const ModuleMetadata& metadata);

// In the layout of module format `version` (1 cannot hold device programs).
std::string encode_metadata(const ModuleMetadata& metadata, uint32_t version);

// Decodes and validates (every index in range, every constant inside `weights`, every
// intermediate inside the arena, every step's kernel a kernel or device program of the module);
// the plan's constants become views of `weights`, which `owner` keeps alive. Throws
// tessera::Error ("corrupt module metadata: ...") on anything inconsistent.
ModuleMetadata decode_metadata(const char* data, size_t size, uint32_t version, char* weights, size_t weights_size,
                               std::shared_ptr<void> owner);

}  // namespace tessera::runtime
