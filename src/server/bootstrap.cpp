#include "server/bootstrap.h"

#include <filesystem>

#include "auth/tokens.h"
#include "exec/local/sys_util.h"

namespace ty {
namespace {

constexpr const char* kAdmin = "admin";

// The first line of `path`, trimmed; empty when the file does not exist.
Result<std::string> readTokenFile(const std::string& path) {
  auto text = sys::readFile(path);
  if (!text.isOk()) {
    if (text.status().code() == StatusCode::kNotFound) return std::string();
    return text.status();
  }
  std::string line = text->substr(0, text->find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

Result<BootstrapOutcome> bootstrapAdmin(Store& store, Timestamp now, const std::string& data_dir,
                                        const std::string& token_file,
                                        const std::vector<std::string>& projects) {
  BootstrapOutcome out;
  std::vector<std::string> wanted = {"default"};
  wanted.insert(wanted.end(), projects.begin(), projects.end());
  for (const std::string& name : wanted) {
    if (!validIdentityName(name)) {
      return Status::invalidArgument("project \"" + name +
                                         "\" is not a valid name: use 1-64 of a-z, 0-9, '.', "
                                         "'_' and '-'",
                                     "scheduler.queues");
    }
    if (Status st = store.createProject({name, now});
        !st.isOk() && st.code() != StatusCode::kAlreadyExists) {
      return st;
    }
  }
  TY_ASSIGN_OR_RETURN(std::vector<User> users, store.listUsers());
  const bool first_start = users.empty();

  std::string token;
  if (!token_file.empty()) {
    auto read = readTokenFile(token_file);
    if (!read.isOk() || !auth::looksLikeToken(*read)) {
      return Status::invalidArgument(
          "the first line of " + token_file +
              " must be an API token (\"ty_\" and 43 characters of base64url)",
          "--bootstrap-token-file");
    }
    token = *read;
  } else {
    // Written before the store is touched: a crash in between leaves a token
    // the next start finds and stores, never an admin nobody can reach.
    out.token_path = data_dir + "/admin.token";
    TY_ASSIGN_OR_RETURN(token, readTokenFile(out.token_path));
    if (!auth::looksLikeToken(token)) token.clear();
    if (first_start && token.empty()) {
      token = auth::newToken();
      TY_RETURN_IF_ERROR(sys::writeFileAtomic(out.token_path, token + "\n", 0600));
    }
  }

  if (first_start) {
    User admin;
    admin.name = kAdmin;
    admin.is_admin = true;
    admin.created_at = now;
    if (Status st = store.createUser(admin);
        !st.isOk() && st.code() != StatusCode::kAlreadyExists) {
      return st;
    }
  }
  if (token.empty()) return out;
  auto admin = store.getUser(kAdmin);
  if (!admin.isOk()) {
    // Someone removed or renamed the first admin; the token has no owner.
    return admin.status().code() == StatusCode::kNotFound
               ? out
               : Result<BootstrapOutcome>(admin.status());
  }
  TY_ASSIGN_OR_RETURN(auto live, store.findTokenByHash(auth::tokenHash(token), now));
  if (live) return out;
  ApiToken t;
  t.user = kAdmin;
  t.name = "bootstrap";
  t.hash = auth::tokenHash(token);
  t.prefix = auth::displayPrefix(token);
  t.created_at = now;
  auto created = store.createToken(t);
  if (!created.isOk()) {
    // The hash is known but not live: the token was revoked or expired,
    // and stays so.
    if (created.status().code() == StatusCode::kAlreadyExists) return out;
    return created.status();
  }
  if (token_file.empty()) out.new_token = token;
  return out;
}

}  // namespace ty
