#include "auth/tokens.h"

#include <sodium.h>

#include <array>

#include "auth/passwords.h"

namespace ty::auth {
namespace {

bool isBase64UrlChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool isSpace(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string newToken() {
  ensureSodium();
  std::array<unsigned char, kTokenRandomBytes> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  constexpr int kVariant = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
  std::array<char, sodium_base64_ENCODED_LEN(kTokenRandomBytes, kVariant)> text{};
  sodium_bin2base64(text.data(), text.size(), bytes.data(), bytes.size(), kVariant);
  sodium_memzero(bytes.data(), bytes.size());
  return std::string(kTokenPrefix) + text.data();
}

bool looksLikeToken(std::string_view token) {
  if (token.size() != kTokenLength || !token.starts_with(kTokenPrefix)) return false;
  for (char c : token.substr(kTokenPrefix.size())) {
    if (!isBase64UrlChar(c)) return false;
  }
  return true;
}

// A fast hash is the right tool here, unlike for passwords: a token carries
// 256 random bits, so nobody can search its space however cheap each guess
// is, and a slow hash would only cost every API request tens of
// milliseconds. No salt is needed for the same reason, and an unsalted hash
// lets the store find the token by an indexed lookup.
std::string tokenHash(std::string_view token) {
  ensureSodium();
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest{};
  crypto_hash_sha256(digest.data(), reinterpret_cast<const unsigned char*>(token.data()),
                     token.size());
  std::array<char, crypto_hash_sha256_BYTES * 2 + 1> hex{};
  sodium_bin2hex(hex.data(), hex.size(), digest.data(), digest.size());
  return std::string(hex.data());
}

std::string displayPrefix(std::string_view token) {
  if (!token.starts_with(kTokenPrefix)) return {};
  return std::string(token.substr(kTokenPrefix.size(), kDisplayPrefixLength));
}

bool hashesEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  ensureSodium();
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::string> parseBearer(std::string_view header) {
  constexpr std::string_view kScheme = "bearer";
  size_t i = 0;
  while (i < header.size() && isSpace(header[i])) ++i;
  if (header.size() - i < kScheme.size()) return std::nullopt;
  for (size_t k = 0; k < kScheme.size(); ++k) {
    if (lower(header[i + k]) != kScheme[k]) return std::nullopt;
  }
  i += kScheme.size();
  // The scheme must be followed by at least one space: "Bearerx" is not it.
  if (i >= header.size() || !isSpace(header[i])) return std::nullopt;
  while (i < header.size() && isSpace(header[i])) ++i;
  size_t end = header.size();
  while (end > i && isSpace(header[end - 1])) --end;
  std::string_view token = header.substr(i, end - i);
  if (token.empty()) return std::nullopt;
  for (char c : token) {
    if (isSpace(c)) return std::nullopt;
  }
  return std::string(token);
}

}  // namespace ty::auth
