// Running the programs that finish some targets' code (the C compiler and linker, ptxas) as child
// processes, without a shell. Internal to targets.
#pragma once
#include <string>
#include <vector>

namespace tessera::targets {

// The first directory on PATH holding an executable `name`; empty if none does.
std::string find_program(const std::string& name);

// Runs `argv` (argv[0] a path; no shell, so paths need no quoting) and waits for it; returns its
// exit status and sets `output` to what it printed. Throws when it cannot be started.
int run_program(const std::vector<std::string>& argv, std::string* output);

}  // namespace tessera::targets
