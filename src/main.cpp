#include <cstring>

#include "exec/local/supervisor.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "__supervise") == 0) {
    return ty::runSupervisor(argc - 1, argv + 1);
  }
  return 0;
}
