// The supervisor: a small process (`trainyard __supervise ...`) that runs
// one replica, outlives the server, and records how the replica ended.
#pragma once

namespace ty {

// Entry point of `trainyard __supervise`; argv[0] is "__supervise".
// Returns the process exit status.
int runSupervisor(int argc, char** argv);

}  // namespace ty
