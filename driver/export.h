// Exporting a built model: its kernels compiled again as machine code for the build's target and
// linked into a shared library, with the execution plan and the weights, in the module file
// format (runtime/module_file.h) that the runtime loads with no compiler around.
#pragma once
#include <string>

#include "driver/build.h"

namespace tessera::driver {

// Writes `result` to `path` (replacing it atomically). Throws tessera::Error if the target cannot
// be exported or no linker is installed.
void export_module(const BuildResult& result, const std::string& path);

}  // namespace tessera::driver
