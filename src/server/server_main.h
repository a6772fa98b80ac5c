// `trainyard server`: wiring of store, GPUs, executor, reconcile loop and
// API into one process.
#pragma once

#include <CLI/CLI.hpp>

namespace ty {

// Adds the `server` subcommand to the CLI.
void addServerCommand(CLI::App& app);

}  // namespace ty
