// API tokens: format, storage hash and the Authorization header.
//
// A token is "ty_" followed by 43 characters of unpadded base64url: 32 bytes
// (256 bits) from libsodium's CSPRNG. The prefix makes a leaked token easy to
// recognise (secret scanners, logs); the server stores only tokenHash(token)
// and the short displayPrefix() so that a user can tell their tokens apart.
//
// Free functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ty::auth {

inline constexpr std::string_view kTokenPrefix = "ty_";
inline constexpr std::size_t kTokenRandomBytes = 32;
// "ty_" + base64url(32 bytes) without padding: 3 + 43.
inline constexpr std::size_t kTokenLength = 46;
inline constexpr std::size_t kDisplayPrefixLength = 8;

// A fresh random token. Shown to its owner once; never stored.
std::string newToken();

// True when `token` has the shape newToken() produces: the prefix, the
// length and only base64url characters. A cheap check before any lookup.
bool looksLikeToken(std::string_view token);

// Lower-case hex SHA-256 of the whole token (64 characters): the value the
// store keeps and looks tokens up by.
std::string tokenHash(std::string_view token);

// The first 8 characters after "ty_", shown when listing tokens. 8 base64url
// characters are 48 bits: enough to tell tokens apart, far too few to help
// guess one. Empty when `token` does not start with "ty_".
std::string displayPrefix(std::string_view token);

// Constant-time comparison of two hashes (sodium_memcmp): the time taken
// does not depend on where they first differ. False when the lengths differ
// (lengths are not secret: every hash is 64 characters).
bool hashesEqual(std::string_view a, std::string_view b);

// The token of an Authorization header value "Bearer <token>": the scheme is
// matched case-insensitively (RFC 7235), spaces around the token are
// trimmed. nullopt for any other scheme, a missing or empty token, or a
// token containing a space.
std::optional<std::string> parseBearer(std::string_view header);

}  // namespace ty::auth
