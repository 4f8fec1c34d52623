// The C functions generated code may call (the runtime's parallel launcher, libm, a few of
// libc), with their addresses in this process. The JIT resolves calls through this table only,
// never through the process's global symbol table, which does not see libraries loaded with
// RTLD_LOCAL (as Python loads extensions). Internal to targets/llvm.
#pragma once
#include <string>
#include <vector>

namespace tessera::targets::llvm_backend {

struct ExternalSymbol {
  const char* name;
  void* address;
};

const std::vector<ExternalSymbol>& external_symbols();

// Whether `name` is one of them, so a kernel must not take it.
bool is_external_symbol(const std::string& name);

}  // namespace tessera::targets::llvm_backend
