#include "sim/simulate_command.h"

namespace ty {

void addJobsCommand(CLI::App& simulate) {
  simulate.add_subcommand("jobs", "Time-based replay of a job trace with queues and preemption");
}

}  // namespace ty
