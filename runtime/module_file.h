// The file an exported model is: one shared library that the system's dynamic loader can open,
// with Tessera's container appended after the ELF image (the loader maps only what the ELF
// program headers name, so the appended bytes cost nothing at dlopen):
//
//   0                the ELF shared object holding the kernels ("code"); empty in a module for a
//                    device (OpenCL, CUDA), whose device code is in the metadata (version 2 on)
//   64-aligned       header: magic "TESSERA-MODULE\0\0", u32 format version, u32 header size,
//                    u64 file size, then {u64 offset, u64 size, u64 xxh64} for code, metadata
//                    and weights, then the xxh64 of the header's preceding bytes
//   64-aligned       metadata (module_metadata.h)
//   64-aligned       weights: every constant, each 64-byte aligned
//   end - 32         trailer: u64 header offset, u32 format version, u32 trailer size (32),
//                    u64 xxh64 of those 16 bytes, magic "TSRMODv1"
//
// Everything is little-endian. Reading validates all of it, checksums of every byte included,
// before the caller hands the code to the dynamic loader: a module that is not one, truncated,
// corrupt or too new fails with a message saying so, and none of its code runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/module_metadata.h"

namespace tessera::runtime {

// 2: device modules (device programs in the metadata, no host code). 3: symbolic sizes (shapes as
// expressions of dimension variables, a kernel's variables, a plan's slots as expressions). 4:
// device programs of symbolic sizes (their variables, grids as expressions). 5: plans specialized
// for hot sizes beside a plan of symbolic sizes, and the dimensions a plan needs non-empty. 6:
// programs (control flow, data-dependent shapes) and the plans of their stages.
// Versions 1 to 4 still load.
constexpr uint32_t kModuleFormatVersion = 6;

// Writes `code` (a linked shared object) and `metadata` (with its plan's constants) to `path`,
// through a temporary file renamed into place: a module already loaded from `path` keeps its
// (unchanged) inode instead of seeing its code rewritten under it. An older `version` is for
// runtimes that read no newer (version 1 holds no device programs).
void write_module_file(const std::string& path, const std::string& code, const ModuleMetadata& metadata,
                       uint32_t version = kModuleFormatVersion);

// A validated module file, mapped into memory (copy-on-write; the plan's constants point into
// the mapping, so weights are never copied) and still open, so the code handed to the dynamic
// loader is the very file that was checked.
struct ModuleFile {
  std::string path;
  ModuleMetadata metadata;
  uint32_t format_version = 0;
  uint64_t file_size = 0;
  uint16_t elf_machine = 0;  // e_machine of the code; 0 when there is none (a device module)
  std::shared_ptr<int> fd;   // closed when the last holder goes
};

// Throws tessera::Error naming `path` and the problem: not a Tessera module, truncated, a newer
// format version, a checksum mismatch, inconsistent metadata.
ModuleFile read_module_file(const std::string& path);

// Whether `path` looks like a module rather than a model: it ends in a module trailer, or it is an
// ELF file (a CPU module cut short, or a library that is no module, which loading then names).
// Cheap: what `tessera run` tells modules from ONNX models by.
bool is_module_file(const std::string& path);

}  // namespace tessera::runtime
