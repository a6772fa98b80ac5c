#include "sim/simulate_command.h"

namespace ty {

void addSimulateCommand(CLI::App& app) {
  CLI::App* sim = app.add_subcommand(
      "simulate", "Replay a cluster trace through the scheduler core on a simulated clock");
  sim->require_subcommand(1);
  addOpenbCommand(*sim);
  addJobsCommand(*sim);
}

}  // namespace ty
