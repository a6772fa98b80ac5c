#include "exec/local/supervisor.h"

namespace ty {

int runSupervisor(int, char**) { return 1; }  // placeholder until the executor lands

}  // namespace ty
