// trainyard: one binary for the server, the CLI and the supervisor of job
// processes.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstring>

#include "cli/commands.h"
#include "exec/local/supervisor.h"
#include "server/node_exporter.h"
#include "server/server_main.h"
#include "sim/simulate_command.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "__supervise") == 0) {
    return ty::runSupervisor(argc - 1, argv + 1);
  }
  // Diagnostics go to stderr; stdout is for what commands print.
  spdlog::set_default_logger(spdlog::stderr_color_mt("trainyard"));
  CLI::App app{"Trainyard: a GPU training platform. Submit jobs, watch them, share GPUs fairly."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trainyard 0.1.0");
  ty::addServerCommand(app);
  ty::addNodeExporterCommand(app);
  ty::addClientCommands(app);
  ty::addSimulateCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return 0;
}
