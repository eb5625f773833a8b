// What store_backup.cc shares with the engines' halves (sqlite_backup.cc, postgres_backup.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server/db.h"
#include "server/store_backup.h"

namespace hpc::cp::backup {

// An order-independent digest of a table's rows: the sum of each row's SHA-256 (its first 64
// bits), so two engines' tools may list the rows in any order.
class RowDigest {
 public:
  void Add(const std::string& row);
  TableRows Done(std::string table) const;

 private:
  uint64_t sum_ = 0;
  int64_t rows_ = 0;
};

// A row as one unambiguous string (each value length-prefixed, NULL apart from "").
std::string RowText(const SqlRow& row);

// What a backup holds, read from the file itself.
struct BackupContents {
  int schema_version = 0;
  std::vector<TableRows> tables;
};

// One engine's part: the rest (refusals, keeping what a forced restore replaces, verifying) is
// the same for both.
struct EngineOps {
  std::string name;
  // The store's tables now (none when it does not exist yet).
  std::function<Result<std::vector<TableRows>>()> store_tables;
  // Writes a backup into `file`, an empty file of mode 0600.
  std::function<Status(const std::string& file)> write_backup;
  // Checks that `file` is a whole backup of this engine and reads what it holds.
  std::function<Result<BackupContents>(const std::string& file)> read_backup;
  // Replaces the store's content with the backup's.
  std::function<Status(const std::string& file)> load_backup;
};

EngineOps SqliteOps(const std::string& path);
EngineOps PostgresOps(const std::string& url);

// The larger of `current` and a schema_migrations version written as text (0 when it is not a
// version number).
int MaxVersion(int current, const std::string& version);

// Refuses a backup holding tables that are not the store's: another application's database,
// which a restore would mistake for a store, or drop.
Status OnlyStoreTables(const std::vector<std::string>& tables, const std::string& file);

}  // namespace hpc::cp::backup
