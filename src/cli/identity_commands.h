// The identity subcommands of `trainyard`: who the CLI acts as, and the
// users, projects, members, API tokens and audit log of the server.
//
//   login [--token T|-] [--user U] [--token-name N]   save a token for later commands
//   logout                                            revoke it and forget it
//   whoami                                            the user, projects and token in use
//   passwd [--user U]                                 change a password
//   users | users create NAME | users update NAME     (global admins)
//   projects | projects create NAME | projects delete NAME
//   members P | members P add USER ROLE | members P remove USER
//   tokens | tokens create NAME | tokens revoke ID
//   audit [--user U] [--limit N] [--before SEQ]       (global admins)
//
// Secrets (passwords, `login --token -`) are read from the terminal without
// echo, or as lines from stdin when it is not a terminal. A token is printed
// only by `tokens create`, the one time the server shows it.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command_support.h"

namespace ty {

void addIdentityCommands(CLI::App& app, const std::shared_ptr<Globals>& g);

}  // namespace ty
