// The little SQL access the control plane's store needs, over SQLite (sqlite3) or PostgreSQL
// (libpq). Statements use $1, $2... placeholders; values travel as text (NULL as nullopt) and
// rows come back as text, which both engines convert by column type.
//
// Every call leases a connection of its own from a pool for its duration, so requests served
// at once never share transaction state: a batch's BEGIN..COMMIT holds its connection alone,
// and another request's write can neither land inside it nor be rolled back with it.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::cp {

using SqlValue = std::optional<std::string>;
using SqlRow = std::vector<SqlValue>;
using RowSink = std::function<bool(const SqlRow&)>;  // returns false to stop

// One connection of one engine; used by one thread at a time (the pool sees to that).
class DbConnection {
 public:
  virtual ~DbConnection() = default;
  // A script of several statements, no parameters (migrations, BEGIN/COMMIT).
  virtual Status ExecScript(const std::string& sql) = 0;
  virtual Status Query(const std::string& sql, const std::vector<SqlValue>& params, const RowSink& row) = 0;
  // The connection was lost (server restarted): dropped instead of going back to the pool.
  virtual bool Broken() const { return false; }
};

struct DbEngine {
  std::string name;         // "sqlite" | "postgres"
  std::string begin_write;  // starts a transaction that writes
  std::string schema_lock;  // run first in the migration transaction: one migrator at a time
  size_t max_connections = 8;
  std::function<Result<std::unique_ptr<DbConnection>>()> open;
};

class Db {
 public:
  explicit Db(DbEngine engine);
  ~Db();
  const char* engine() const { return engine_.name.c_str(); }

  Status ExecScript(const std::string& sql);
  // One statement on a connection of its own; `row` is called for each result row.
  Status Query(const std::string& sql, const std::vector<SqlValue>& params, const RowSink& row = nullptr);
  // The same statement run for many parameter sets in one transaction.
  Status ExecBatch(const std::string& sql, const std::vector<std::vector<SqlValue>>& params);
  // `body` on one connection inside a write transaction: committed when it returns Ok, rolled
  // back otherwise.
  Status Transaction(const std::function<Status(DbConnection&)>& body);
  // A Transaction that first takes the engine's schema lock, so that two servers starting at
  // once on one database apply each migration once.
  Status SchemaTransaction(const std::function<Status(DbConnection&)>& body);

  size_t open_connections() const;
  // Called after every call with its duration and whether it succeeded (set before use).
  void set_observer(std::function<void(double seconds, bool ok)> observer) { observer_ = std::move(observer); }

 private:
  class Lease;
  Result<std::unique_ptr<DbConnection>> Acquire();
  void Release(std::unique_ptr<DbConnection> c);
  Status WithConnection(const std::function<Status(DbConnection&)>& body);

  DbEngine engine_;
  std::function<void(double, bool)> observer_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<DbConnection>> idle_;
  size_t open_ = 0;
};

Result<std::unique_ptr<Db>> OpenSqlite(const std::string& path);
Result<std::unique_ptr<Db>> OpenPostgres(const std::string& url);

}  // namespace hpc::cp
