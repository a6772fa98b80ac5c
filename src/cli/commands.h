// The client subcommands of `trainyard`: submit, jobs, describe, logs,
// cancel, nodes. Each prints a table for people or, with -o json|yaml,
// the API's JSON for scripts. Exit codes: 0 ok, 1 failure, 2 usage.
#pragma once

#include <CLI/CLI.hpp>

namespace ty {

// Adds the client subcommands and the global --server / -o options.
void addClientCommands(CLI::App& app);

}  // namespace ty
