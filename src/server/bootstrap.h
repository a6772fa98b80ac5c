// The first administrator: how a new server gets someone who can sign in,
// without a default password anywhere.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "store/store.h"

namespace ty {

struct BootstrapOutcome {
  // The token made at this start, to print once; empty when none was made.
  std::string new_token;
  std::string token_path;  // where it was written
};

// Makes sure the project `default` and `projects` (those the configured
// queues name) exist, and that an admin can sign in:
//  - over a store without users: creates the global admin `admin`, with the
//    token from `token_file` when given, else a new one written (mode 0600)
//    to <data_dir>/admin.token;
//  - on later starts: makes sure the token of `token_file` (or of
//    <data_dir>/admin.token, left by a first start that stopped halfway)
//    exists for `admin`, unless it was revoked.
// Each step is idempotent, so a crash at any point is repaired by the next
// start. InvalidArgument naming --bootstrap-token-file when that file holds
// no token.
Result<BootstrapOutcome> bootstrapAdmin(Store& store, Timestamp now, const std::string& data_dir,
                                        const std::string& token_file,
                                        const std::vector<std::string>& projects = {});

}  // namespace ty
