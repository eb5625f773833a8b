// The little SQL access the control plane's store needs, over SQLite (sqlite3) or PostgreSQL
// (libpq). Statements use $1, $2... placeholders; values travel as text (NULL as nullopt) and
// rows come back as text, which both engines convert by column type.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::cp {

using SqlValue = std::optional<std::string>;
using SqlRow = std::vector<SqlValue>;

class Db {
 public:
  virtual ~Db() = default;
  virtual const char* engine() const = 0;  // "sqlite" | "postgres"
  // A script of several statements, no parameters (migrations).
  virtual Status ExecScript(const std::string& sql) = 0;
  // One statement; `row` is called for each result row and may return false to stop.
  virtual Status Query(const std::string& sql, const std::vector<SqlValue>& params,
                       const std::function<bool(const SqlRow&)>& row = nullptr) = 0;
  // The same statement run for many parameter sets in one transaction.
  virtual Status ExecBatch(const std::string& sql, const std::vector<std::vector<SqlValue>>& params) = 0;
};

Result<std::unique_ptr<Db>> OpenSqlite(const std::string& path);
Result<std::unique_ptr<Db>> OpenPostgres(const std::string& url);

}  // namespace hpc::cp
