// Turning an object file into a shared library with the system's linker. Exported modules are
// linked by a C compiler driver (cc for the host, <triple>-gcc when cross-compiling), which
// knows the C library to link against; ld.lld serves as a last resort for foreign triples.
#pragma once
#include <string>

namespace tessera::targets {

// Links `object` (code for the normalized LLVM `triple`; `requested_triple` is the one the user
// wrote, whose `<requested_triple>-gcc` is tried first) into the shared library `output`.
// Throws tessera::Error naming the linkers looked for if none is installed, or quoting the
// linker's messages if it fails.
void link_shared_library(const std::string& object, const std::string& triple, const std::string& requested_triple,
                         const std::string& output);

// The bytes of the shared library just built at `path`, for a module file; throws naming it when
// it cannot be read.
std::string read_shared_library(const std::string& path);

}  // namespace tessera::targets
