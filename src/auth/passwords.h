// Password hashing: argon2id through libsodium's crypto_pwhash_str.
//
// The stored hash is libsodium's self-describing string
// ("$argon2id$v=19$m=65536,t=2,p=1$salt$hash"): it carries the algorithm,
// its parameters and a random salt, so a hash made today still verifies
// after the defaults are raised, and needsRehash() says when to upgrade it
// on the next successful login.
//
// Free functions with no state of their own beyond libsodium's one-time
// initialisation; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ty::auth {

// Argon2id cost. The defaults are libsodium's INTERACTIVE limits (2 passes,
// 64 MiB): about 0.15 s per hash on a shared development machine, fine for a
// login and expensive for an offline guesser. Tests pass cheaper values so that a run
// stays fast; production code takes the defaults.
struct PasswordParams {
  unsigned long long ops_limit;
  std::size_t mem_limit;
  static PasswordParams interactive();
  // The cheapest parameters libsodium accepts; tests only.
  static PasswordParams minimal();
};

// Passwords longer than this are refused: argon2id would accept them, but an
// unbounded input is a cheap way to make the server do expensive work.
inline constexpr std::size_t kMaxPasswordBytes = 1024;

// Initialises libsodium once; safe to call from any thread, any number of
// times. Aborts if libsodium cannot initialise (no usable random source):
// nothing in this layer is safe without it.
void ensureSodium();

// Checks the length rules. InvalidArgument (field "password") when the
// password is empty or over kMaxPasswordBytes.
Status checkPassword(std::string_view plain);

// The argon2id hash string of `plain`. InvalidArgument (field "password")
// for an empty or over-long password; ResourceExhausted when libsodium
// cannot allocate the working memory.
Result<std::string> hashPassword(std::string_view plain,
                                 const PasswordParams& params = PasswordParams::interactive());

// True when `plain` matches `hash`. False for a wrong password, an empty or
// over-long password and a malformed hash; callers cannot tell these apart,
// which is what a login needs.
bool verifyPassword(const std::string& hash, std::string_view plain);

// True when `hash` was made with parameters other than `params` (or is not
// an argon2id hash at all): rehash the password after the next successful
// verify.
bool needsRehash(const std::string& hash,
                 const PasswordParams& params = PasswordParams::interactive());

}  // namespace ty::auth
