#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "server/db.h"

namespace hpc::cp {
namespace {

class SqliteConnection : public DbConnection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override {
    for (auto& [sql, st] : statements_) sqlite3_finalize(st);
    sqlite3_close(db_);
  }

  Status ExecScript(const std::string& sql) override {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      return Status::Errorf("sqlite: {}", msg);
    }
    return Status::Ok();
  }

  Status Query(const std::string& sql, const std::vector<SqlValue>& params, const RowSink& row) override {
    sqlite3_stmt* st = nullptr;
    RETURN_IF_ERROR(Prepared(sql, &st));
    Status s = Run(st, params, row);
    sqlite3_reset(st);  // ends the statement's read so a later COMMIT is not held up
    return s;
  }

 private:
  // Statements are prepared once per connection: a batch of thousands of rows binds the same one.
  Status Prepared(const std::string& sql, sqlite3_stmt** st) {
    if (auto it = statements_.find(sql); it != statements_.end()) {
      *st = it->second;
      return Status::Ok();
    }
    // $N placeholders become SQLite's ?N (our statements hold no '$' in literals).
    std::string q = sql;
    for (size_t i = 0; i + 1 < q.size(); ++i) {
      if (q[i] == '$' && std::isdigit(static_cast<unsigned char>(q[i + 1]))) q[i] = '?';
    }
    if (sqlite3_prepare_v2(db_, q.c_str(), -1, st, nullptr) != SQLITE_OK) {
      return Status::Errorf("sqlite: {} in: {}", sqlite3_errmsg(db_), sql.substr(0, 120));
    }
    if (statements_.size() >= kMaxCachedStatements) {
      for (auto& [old, s] : statements_) sqlite3_finalize(s);
      statements_.clear();
    }
    statements_[sql] = *st;
    return Status::Ok();
  }

  Status Run(sqlite3_stmt* st, const std::vector<SqlValue>& params, const RowSink& row) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]) {
        sqlite3_bind_text(st, static_cast<int>(i + 1), params[i]->data(), static_cast<int>(params[i]->size()),
                          SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_null(st, static_cast<int>(i + 1));
      }
    }
    while (true) {
      int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return Status::Errorf("sqlite: {}", sqlite3_errmsg(db_));
      if (!row) continue;
      SqlRow r;
      int n = sqlite3_column_count(st);
      for (int c = 0; c < n; ++c) {
        const unsigned char* t = sqlite3_column_text(st, c);
        r.push_back(t ? SqlValue(std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(st, c)))
                      : std::nullopt);
      }
      if (!row(r)) return Status::Ok();
    }
  }

  static constexpr size_t kMaxCachedStatements = 64;
  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*> statements_;
};

Result<std::unique_ptr<DbConnection>> OpenSqliteConnection(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::Errorf("sqlite {}: {}", path, msg);
  }
  // Writers queue behind each other for up to 10 s instead of failing with SQLITE_BUSY.
  sqlite3_busy_timeout(db, 10000);
  auto c = std::make_unique<SqliteConnection>(db);
  // WAL: readers never block the writer. Switching a fresh database to it takes an exclusive
  // lock, and SQLite answers "database is locked" at once, without its busy handler, when
  // another connection is switching it at the same moment (two servers starting together on
  // one new file): retried here within the same 10 s.
  Status wal = c->ExecScript("PRAGMA journal_mode=WAL;");
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !wal.ok() && wal.message().find("locked") != std::string::npos && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    wal = c->ExecScript("PRAGMA journal_mode=WAL;");
  }
  RETURN_IF_ERROR(wal);
  // NORMAL sync is durable across process crashes.
  RETURN_IF_ERROR(c->ExecScript("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"));
  return std::unique_ptr<DbConnection>(std::move(c));
}

}  // namespace

Result<std::unique_ptr<Db>> OpenSqlite(const std::string& path) {
  // Token digests and every user's job history: readable by the owner only (the WAL and shm
  // files SQLite creates take the database file's mode).
  if (path != ":memory:") {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::Errorf("sqlite {}: {}", path, std::strerror(errno));
    ::close(fd);
  }
  DbEngine e;
  e.name = "sqlite";
  // IMMEDIATE takes the write lock at BEGIN, so a transaction never fails half way for want of it.
  e.begin_write = "BEGIN IMMEDIATE";
  // One writer at a time is SQLite's own rule; an in-memory database is one connection's alone.
  e.max_connections = path == ":memory:" ? 1 : 8;
  e.open = [path] { return OpenSqliteConnection(path); };
  auto db = std::make_unique<Db>(std::move(e));
  RETURN_IF_ERROR(db->ExecScript("SELECT 1"));  // fails now, not at the first request
  return db;
}

}  // namespace hpc::cp
