// The client subcommands of `trainyard`: submit, jobs, describe, logs,
// cancel, nodes, queue (and, for global admins, `queue set NAME -f FILE`
// and `queue delete NAME`), and the identity verbs (login, logout, whoami,
// passwd, users, projects, members, tokens, audit; see
// identity_commands.h). Each prints a table for people or, with
// -o json|yaml, the API's JSON for scripts. Exit codes: 0 ok, 1 failure,
// 2 usage.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/command_support.h"

namespace ty {

// Adds the client subcommands and the global --server / --ca-cert / -o
// options. Commands read and write `io`; the overload without one uses the
// process's streams and exits the process when a command fails.
void addClientCommands(CLI::App& app, CliIo io);
void addClientCommands(CLI::App& app);

// Runs one client command line (without the program name) as `trainyard`
// would, but in this process: output goes to io's streams and a failing
// command returns its exit code instead of ending the process. io.exit is
// replaced. Used by tests.
int runClientCommand(const std::vector<std::string>& args, CliIo io);

}  // namespace ty
