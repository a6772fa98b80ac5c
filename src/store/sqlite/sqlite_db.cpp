#include "store/sqlite/sqlite_db.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace ty::sqlite {

Status errorStatus(int rc, std::string_view what, sqlite3* db) {
  std::string msg(what);
  msg += ": ";
  // The connection's message is more specific, but only when it is about rc.
  if (db != nullptr && sqlite3_extended_errcode(db) == rc) {
    msg += sqlite3_errmsg(db);
  } else {
    msg += sqlite3_errstr(rc);
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
      return Status::unavailable(std::move(msg));
    default:
      return Status::internal(std::move(msg));
  }
}

Stmt::Stmt(Stmt&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), in_use_(other.in_use_), bind_rc_(other.bind_rc_) {
  other.stmt_ = nullptr;
  other.in_use_ = nullptr;
}

Stmt::~Stmt() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  if (in_use_ != nullptr) *in_use_ = false;
}

void Stmt::bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Stmt::bind(int index, std::int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Stmt::bind(int index, const std::string& value) {
  int rc =
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Stmt::bind(int index, std::optional<int> value) {
  int rc = value ? sqlite3_bind_int64(stmt_, index, *value) : sqlite3_bind_null(stmt_, index);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

Result<bool> Stmt::step() {
  if (bind_rc_ != SQLITE_OK) return errorStatus(bind_rc_, "bind", db_->raw());
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error(rc, "step");
}

Status Stmt::run() {
  TY_ASSIGN_OR_RETURN(bool row, step());
  (void)row;  // a statement run for effect may still return a row (pragmas)
  return Status::ok();
}

std::int64_t Stmt::int64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Stmt::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Stmt::text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<int> Stmt::optionalInt(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int(stmt_, column);
}

Result<std::unique_ptr<Db>> Db::open(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = errorStatus(rc, "open " + path, raw);
    sqlite3_close_v2(raw);  // a handle may be allocated even on failure
    return s;
  }
  sqlite3_extended_result_codes(raw, 1);
  return std::unique_ptr<Db>(new Db(raw));
}

Db::~Db() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close_v2(db_);
}

Status Db::exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return Status::ok();
  return error(rc, "exec");
}

Result<Stmt> Db::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return error(rc, "prepare");
    it = cache_.emplace(sql, Cached{stmt, false}).first;
  }
  if (it->second.in_use) {
    std::fprintf(stderr, "sqlite: statement borrowed twice: %s\n", sql.c_str());
    std::abort();
  }
  it->second.in_use = true;
  return Stmt(this, it->second.stmt, &it->second.in_use);
}

}  // namespace ty::sqlite
