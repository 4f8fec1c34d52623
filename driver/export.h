// Exporting a built model: its kernels compiled again as machine code for the build's target and
// linked into a shared library, with the execution plan and the weights, in the module file
// format (runtime/module_file.h) that the runtime loads with no compiler around.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "driver/build.h"
#include "driver/program_build.h"
#include "driver/shape_specialized_build.h"

namespace tessera::driver {

// Writes `result` to `path` (replacing it atomically). Throws tessera::Error if the target cannot
// be exported or no linker is installed. `hot`: builds of the same model at hot sizes (static
// shapes) beside `result`, of symbolic sizes; the module serves the calls of their sizes with
// them (as the library that built them does) and every other size with `result`.
void export_module(const BuildResult& result, const std::string& path,
                   const std::vector<std::shared_ptr<const BuildResult>>& hot = {});

// Writes a model of symbolic input sizes as one module that runs at any size: its build for every
// size (made now if no call has made it) with the builds of its hot sizes. Throws naming why when
// the model is built per size (its symbolic_reason).
void export_module(ShapeSpecializedBuild& model, const std::string& path);

// Writes a program built for every size: its plan and each stage's plan and kernels, which the
// runtime runs with no compiler (runtime/program_module.h).
void export_module(const ProgramBuild& program, const std::string& path);

}  // namespace tessera::driver
