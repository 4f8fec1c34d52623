// `tessera tune` (a tuning session on a model) and `tessera db` (list, show, export, import and
// prune the tuning database).
#pragma once
#include <CLI/CLI.hpp>

namespace tessera::cli {

// Adds the subcommands to `app`; run_tuning_commands runs the one that was given, if any, and
// returns its exit status (-1: none of them was given).
void add_tuning_commands(CLI::App& app);
int run_tuning_commands();

}  // namespace tessera::cli
