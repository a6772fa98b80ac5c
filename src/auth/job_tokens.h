// Job tokens: the credential a job uses to report its own training metrics
// (POST /api/v1/jobs/{id}/metrics), injected into its environment as
// TRAINYARD_JOB_TOKEN.
//
//   tyj_<job>_<attempt>_<hex HMAC-SHA256(key, "job:<job>:<attempt>")>
//
// Derived, not stored: the server recomputes the MAC, so there is nothing to
// write per job and nothing to revoke. What bounds a token's life is the
// gateway's check that its attempt is the job's current one and still runs:
// it dies with the attempt. The key is 32 random bytes in
// <data-dir>/job-token.key (mode 0600), made once; deleting the file and
// restarting the server invalidates every job token.
//
// Immutable after construction; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"

namespace ty::auth {

inline constexpr std::string_view kJobTokenPrefix = "tyj_";

class JobTokens {
 public:
  // `key`: the secret, at least 32 bytes. Aborts on a shorter one (a bug).
  explicit JobTokens(std::string key);

  // Reads the key at `path`, or makes a random one there first: written to
  // a temporary file and linked into place, so that two servers starting at
  // once agree on one key and no reader sees half a file. Internal on I/O
  // errors; FailedPrecondition for a file that is not a key.
  static Result<JobTokens> loadOrCreate(const std::string& path);

  // The token of attempt `key`.
  std::string issue(const AttemptKey& key) const;
  // The attempt a token was issued for, when this key made it; nullopt for
  // anything else. The MAC is compared in constant time.
  std::optional<AttemptKey> verify(std::string_view token) const;

  // True when `token` has the job-token prefix (it may still be forged).
  static bool looksLikeJobToken(std::string_view token) {
    return token.substr(0, kJobTokenPrefix.size()) == kJobTokenPrefix;
  }

 private:
  std::string mac(const AttemptKey& key) const;  // 64 hex digits
  std::string key_;
};

}  // namespace ty::auth
