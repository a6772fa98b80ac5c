// `trainyard simulate`: replays cluster traces through the scheduler core
// on a simulated clock.
#pragma once

#include <CLI/CLI.hpp>

namespace ty {

void addSimulateCommand(CLI::App& app);

// Subcommands, each in its own file.
void addOpenbCommand(CLI::App& simulate);  // placement replay, FGD protocol (openb_command.cpp)
void addJobsCommand(CLI::App& simulate);   // time-based job replay (jobs_command.cpp)

}  // namespace ty
