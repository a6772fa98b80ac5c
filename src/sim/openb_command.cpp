#include "sim/simulate_command.h"

namespace ty {

void addOpenbCommand(CLI::App& simulate) {
  simulate.add_subcommand("openb", "Placement replay of an Alibaba openb pod trace (FGD protocol)");
}

}  // namespace ty
