// SQLite's half of store backups (store_backup.h): the online backup API copies a store in use
// page by page into a single database file, and back.
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "common/files.h"
#include "server/store_backup_internal.h"

namespace hpc::cp::backup {
namespace {

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using SqliteFile = std::unique_ptr<sqlite3, CloseDb>;

Result<SqliteFile> OpenFile(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteFile owned(db);
  if (rc != SQLITE_OK) return Status::Errorf("sqlite {}: {}", path, db ? sqlite3_errmsg(db) : "out of memory");
  sqlite3_busy_timeout(db, 10000);
  return owned;
}

Status Exec(sqlite3* db, const std::string& sql, const RowSink& row = nullptr) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    return Status::Errorf("sqlite: {} in: {}", sqlite3_errmsg(db), sql);
  }
  Status s;
  for (int rc = sqlite3_step(st); rc != SQLITE_DONE; rc = sqlite3_step(st)) {
    if (rc != SQLITE_ROW) {
      s = Status::Errorf("sqlite: {}", sqlite3_errmsg(db));
      break;
    }
    if (!row) continue;
    SqlRow r;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const unsigned char* t = sqlite3_column_text(st, c);
      r.push_back(t ? SqlValue(std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(st, c)))
                    : std::nullopt);
    }
    if (!row(r)) break;
  }
  sqlite3_finalize(st);
  return s;
}

// Every page of `from` into `to`, retrying while a writer holds the source for a moment.
Status CopyPages(sqlite3* from, sqlite3* to) {
  sqlite3_backup* b = sqlite3_backup_init(to, "main", from, "main");
  if (!b) return Status::Errorf("sqlite backup: {}", sqlite3_errmsg(to));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  int rc = SQLITE_OK;
  while ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) return Status::Errorf("sqlite backup: {}", sqlite3_errstr(rc));
  return Status::Ok();
}

Result<std::vector<TableRows>> SqliteTables(sqlite3* db) {
  std::vector<std::string> names;
  RETURN_IF_ERROR(Exec(db,
                       "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                       [&](const SqlRow& r) {
                         names.push_back(r[0].value_or(""));
                         return true;
                       }));
  std::vector<TableRows> out;
  for (const auto& name : names) {
    std::string quoted;  // a name from a file: its quotes doubled
    for (char ch : name) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    RowDigest d;
    RETURN_IF_ERROR(Exec(db, fmt::format("SELECT * FROM \"{}\"", quoted), [&](const SqlRow& r) {
      d.Add(RowText(r));
      return true;
    }));
    out.push_back(d.Done(name));
  }
  return out;
}

Result<BackupContents> SqliteReadBackup(const std::string& file) {
  ASSIGN_OR_RETURN(SqliteFile db, OpenFile(file, SQLITE_OPEN_READONLY));
  std::string check;
  RETURN_IF_ERROR(Exec(db.get(), "PRAGMA integrity_check", [&](const SqlRow& r) {
    check += r[0].value_or("");
    return false;
  }));
  if (check != "ok") return Status::InvalidArgument("backup", fmt::format("{} is damaged: {}", file, check));
  BackupContents c;
  ASSIGN_OR_RETURN(c.tables, SqliteTables(db.get()));
  for (const auto& t : c.tables) {
    if (t.table != "schema_migrations") continue;
    RETURN_IF_ERROR(Exec(db.get(), "SELECT version FROM schema_migrations", [&](const SqlRow& r) {
      c.schema_version = MaxVersion(c.schema_version, r[0].value_or("0"));
      return true;
    }));
  }
  return c;
}

Status SqliteWriteBackup(const std::string& store, const std::string& file) {
  if (!files::Exists(store)) return Status::NotFound(fmt::format("no store at {}", store));
  ASSIGN_OR_RETURN(SqliteFile from, OpenFile(store, SQLITE_OPEN_READONLY));
  ASSIGN_OR_RETURN(SqliteFile to, OpenFile(file, SQLITE_OPEN_READWRITE));
  RETURN_IF_ERROR(CopyPages(from.get(), to.get()));
  // The store runs in WAL mode and the copy took its header: one self-contained file instead.
  return Exec(to.get(), "PRAGMA journal_mode=DELETE");
}

Status SqliteLoadBackup(const std::string& file, const std::string& store) {
  // Created as the server creates it: readable by its owner only.
  int fd = ::open(store.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Errorf("sqlite {}: {}", store, std::strerror(errno));
  ::close(fd);
  ASSIGN_OR_RETURN(SqliteFile from, OpenFile(file, SQLITE_OPEN_READONLY));
  ASSIGN_OR_RETURN(SqliteFile to, OpenFile(store, SQLITE_OPEN_READWRITE));
  // One transaction on the store's side: a failure leaves it as it was.
  RETURN_IF_ERROR(CopyPages(from.get(), to.get()));
  // The server runs the store in WAL mode (sqlite_db.cc); the backup is a rollback-journal file.
  return Exec(to.get(), "PRAGMA journal_mode=WAL");
}

}  // namespace

EngineOps SqliteOps(const std::string& path) {
  EngineOps ops;
  ops.name = "sqlite";
  ops.store_tables = [path]() -> Result<std::vector<TableRows>> {
    if (!files::Exists(path)) return std::vector<TableRows>{};
    ASSIGN_OR_RETURN(SqliteFile db, OpenFile(path, SQLITE_OPEN_READONLY));
    return SqliteTables(db.get());
  };
  ops.write_backup = [path](const std::string& file) { return SqliteWriteBackup(path, file); };
  ops.read_backup = SqliteReadBackup;
  ops.load_backup = [path](const std::string& file) { return SqliteLoadBackup(file, path); };
  return ops;
}

}  // namespace hpc::cp::backup
