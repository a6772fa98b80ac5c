#include "auth/passwords.h"

#include <sodium.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace ty::auth {

PasswordParams PasswordParams::interactive() {
  return {crypto_pwhash_OPSLIMIT_INTERACTIVE, crypto_pwhash_MEMLIMIT_INTERACTIVE};
}

PasswordParams PasswordParams::minimal() {
  return {crypto_pwhash_OPSLIMIT_MIN, crypto_pwhash_MEMLIMIT_MIN};
}

void ensureSodium() {
  // sodium_init() is itself idempotent and thread-safe since 1.0.11; the
  // once_flag keeps the check off the hot path and makes the failure fatal
  // exactly once.
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) {
      std::fputs("libsodium failed to initialise\n", stderr);
      std::abort();
    }
  });
}

Status checkPassword(std::string_view plain) {
  if (plain.empty()) return Status::invalidArgument("must not be empty", "password");
  if (plain.size() > kMaxPasswordBytes) {
    return Status::invalidArgument(
        "must be at most " + std::to_string(kMaxPasswordBytes) + " bytes", "password");
  }
  return Status::ok();
}

Result<std::string> hashPassword(std::string_view plain, const PasswordParams& params) {
  TY_RETURN_IF_ERROR(checkPassword(plain));
  ensureSodium();
  char out[crypto_pwhash_STRBYTES];
  // Fails only when the memory limit cannot be allocated.
  if (crypto_pwhash_str_alg(out, plain.data(), plain.size(), params.ops_limit, params.mem_limit,
                            crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return Status::resourceExhausted("cannot allocate memory to hash the password");
  }
  return std::string(out);
}

bool verifyPassword(const std::string& hash, std::string_view plain) {
  if (!checkPassword(plain).isOk()) return false;
  if (hash.empty() || hash.size() >= crypto_pwhash_STRBYTES) return false;
  ensureSodium();
  return crypto_pwhash_str_verify(hash.c_str(), plain.data(), plain.size()) == 0;
}

bool needsRehash(const std::string& hash, const PasswordParams& params) {
  if (hash.empty() || hash.size() >= crypto_pwhash_STRBYTES) return true;
  ensureSodium();
  // The argon2id variant, not the generic one: the generic call would accept
  // an older argon2i hash with the same parameters as current. 0: current;
  // 1: other parameters; -1: not an argon2id hash. Both non-zero answers
  // mean "replace it".
  return crypto_pwhash_argon2id_str_needs_rehash(hash.c_str(), params.ops_limit,
                                                 params.mem_limit) != 0;
}

}  // namespace ty::auth
